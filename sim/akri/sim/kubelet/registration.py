"""The kubelet's `v1beta1.Registration` service on `<device-plugins dir>/kubelet.sock`."""

from __future__ import annotations

import logging
import posixpath
from pathlib import Path
from typing import Any

import grpc

from akri.proto.deviceplugin.v1beta1.api_pb2 import Empty, RegisterRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import RegistrationServicer
from akri.proto.deviceplugin.v1beta1.constants import SUPPORTED_VERSIONS
from akri.sim.kubelet.manager import DeviceManager
from akri.sim.kubelet.model import RegistrationError
from akri.sim.resource_names import is_extended_resource_name

log = logging.getLogger(__name__)


def check_request(request: RegisterRequest) -> None:
    """Refuse what the kubelet refuses before it dials the plugin back."""
    if request.version not in SUPPORTED_VERSIONS:
        raise RegistrationError(
            f"requested API version {request.version!r} is not supported by kubelet. "
            f"Supported versions are {list(SUPPORTED_VERSIONS)}"
        )
    if not is_extended_resource_name(request.resource_name):
        raise RegistrationError(f"the ResourceName {request.resource_name!r} is invalid")


def plugin_socket(directory: Path, endpoint: str) -> Path:
    """Join like Go's filepath.Join: an absolute or `..` endpoint does not escape to `/`."""
    return Path(posixpath.normpath(f"{directory}/{endpoint}"))


class Registration(RegistrationServicer):
    """Validates a Register call, dials the plugin back and hands it to the device manager."""

    def __init__(self, manager: DeviceManager, directory: Path) -> None:
        self._manager = manager
        self._directory = directory

    async def Register(
        self, request: RegisterRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Empty:
        refusal = await self._register(request)
        if refusal is not None:
            log.warning("registration of %s refused: %s", request.resource_name, refusal)
            # The kubelet returns a plain Go error, which gRPC reports as UNKNOWN.
            await context.abort(grpc.StatusCode.UNKNOWN, refusal)
        log.info("registered %s at %s", request.resource_name, request.endpoint)
        return Empty()

    async def _register(self, request: RegisterRequest) -> str | None:
        """Why the kubelet refuses, if it does.

        Returns a string rather than raising so that no traceback (holding the failed dial's
        channel) outlives the call.
        """
        try:
            check_request(request)
            socket = plugin_socket(self._directory, request.endpoint)
            await self._manager.register(request.resource_name, socket)
        except RegistrationError as error:
            return str(error)
        return None
