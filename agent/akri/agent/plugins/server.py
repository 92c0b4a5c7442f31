"""One incarnation of a device plugin: its servicer on a fresh socket, registered with the kubelet.

Registration happens only once the socket is served, as the kubelet dials back at once. Stopping
closes the server, which ends ListAndWatch (the only way a plugin deregisters), and removes the
socket so nothing dials a dead endpoint.

A node runs a server per Instance, so each one is kept small: the service is added through a
generic handler only. grpc's registered-method fast path, which the generated code adds as
well, costs about 20 KB per server and buys nothing at a few calls per minute.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import grpc

from akri import grpc_servers
from akri.agent.plugins.sockets import new_nonce, socket_name
from akri.proto.deviceplugin.v1beta1.api_pb2 import DevicePluginOptions, RegisterRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import (
    DevicePluginServicer,
    add_DevicePluginServicer_to_server,
)
from akri.proto.deviceplugin.v1beta1.constants import VERSION
from akri.unix_sockets import LOCAL_PEER_OPTIONS, add_port

log = logging.getLogger(__name__)

OPTIONS = DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=False)
"""What an akri-py plugin offers unless it says otherwise: Allocate decides, nothing else."""


class _GenericHandlers:
    """Stands in for a server while the generated code adds a service; keeps only the
    generic handlers."""

    def __init__(self) -> None:
        self.handlers: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self.handlers.extend(handlers)

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        """Left out on purpose (see the module docstring)."""


def generic_handlers(servicer: DevicePluginServicer) -> list[grpc.GenericRpcHandler]:
    """What serves `servicer`; the same for each of its incarnations."""
    collected = _GenericHandlers()
    add_DevicePluginServicer_to_server(servicer, cast(grpc.aio.Server, collected))
    return collected.handlers


class PluginServer:
    def __init__(
        self,
        handlers: Sequence[grpc.GenericRpcHandler],
        directory: Path,
        resource: str,
        options: DevicePluginOptions,
    ) -> None:
        """`handlers`: what `generic_handlers` made of the plugin's servicer."""
        self.resource = resource
        self.options = options
        self.name = socket_name(directory, resource, new_nonce())
        """The socket's file name, which is the endpoint the kubelet is given."""
        self.socket = directory / self.name
        self._handlers = handlers
        self._server: grpc.aio.Server | None = None

    @property
    def gone(self) -> bool:
        """The socket file was deleted, as a restarting kubelet does to every plugin socket."""
        return not self.socket.exists()

    async def start(self) -> None:
        self.socket.parent.mkdir(parents=True, exist_ok=True)
        server = grpc.aio.server(options=LOCAL_PEER_OPTIONS)
        server.add_generic_rpc_handlers(self._handlers)
        add_port(server, f"unix://{self.socket}")
        await grpc_servers.start(server)
        self._server = server
        log.debug("%s served on %s", self.resource, self.socket)

    def register_request(self) -> RegisterRequest:
        """What announces this incarnation to the kubelet."""
        return RegisterRequest(
            version=VERSION,
            endpoint=self.name,
            resource_name=self.resource,
            options=self.options,
        )

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop(grace=None)
        self.socket.unlink(missing_ok=True)
