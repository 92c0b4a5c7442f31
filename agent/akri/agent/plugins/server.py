"""One incarnation of a device plugin: its servicer on a fresh socket, registered with the kubelet.

Registration happens only once the socket is served, as the kubelet dials back at once. Stopping
closes the server, which ends ListAndWatch (the only way a plugin deregisters), and removes the
socket so nothing dials a dead endpoint.

A node runs a server per Instance, so each one is kept small: the service is added through a
generic handler only. grpc's registered-method fast path, which the generated code adds as
well, costs about 20 KB per server and buys nothing at a few calls per minute. The generic
handler makes a method's handler when it is called, from handlers the generated code made
once for every servicer, instead of holding five handlers and their bound methods per
plugin (about 2 KB each, 2 MB on a node with a thousand Instances).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias, cast

import grpc

from akri import grpc_servers
from akri.agent.plugins.sockets import new_nonce, socket_name
from akri.owner_only import make_directory
from akri.proto.deviceplugin.v1beta1.api_pb2 import DevicePluginOptions, RegisterRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import (
    DevicePluginServicer,
    add_DevicePluginServicer_to_server,
)
from akri.proto.deviceplugin.v1beta1.constants import VERSION
from akri.unix_sockets import LOCAL_PEER_OPTIONS, add_port

log = logging.getLogger(__name__)

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"

OPTIONS = DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=False)
"""What an akri-py plugin offers unless it says otherwise: Allocate decides, nothing else."""


class _Collected:
    """Stands in for a server while the generated code adds a service; keeps the method
    handlers by name."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        """The same handlers as `add_registered_method_handlers` gets, wrapped."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Handler]) -> None:
        self.handlers.update({f"/{service}/{method}": h for method, h in handlers.items()})


def _templates() -> dict[str, Handler]:
    """Each method's handler by its path, calling the method of the servicer class: its
    serializers and kind, for `_Served` to bind to one servicer."""
    collected = _Collected()
    add_DevicePluginServicer_to_server(
        cast(DevicePluginServicer, DevicePluginServicer), cast(grpc.aio.Server, collected)
    )
    return collected.handlers


_TEMPLATES = _templates()
_BEHAVIOURS = {
    (False, False): "unary_unary",
    (False, True): "unary_stream",
    (True, False): "stream_unary",
    (True, True): "stream_stream",
}
"""The field of a handler that holds its behaviour, by (request, response) streaming."""


class _Served(grpc.GenericRpcHandler):
    """Serves one servicer's methods."""

    __slots__ = ("_servicer",)

    def __init__(self, servicer: DevicePluginServicer) -> None:
        self._servicer = servicer

    def service(self, details: grpc.HandlerCallDetails) -> Handler | None:
        template: Any = _TEMPLATES.get(details.method)
        if template is None:
            return None  # grpc answers UNIMPLEMENTED
        field = _BEHAVIOURS[template.request_streaming, template.response_streaming]
        behaviour = getattr(self._servicer, getattr(template, field).__name__)
        return cast(Handler, template._replace(**{field: behaviour}))


def generic_handlers(servicer: DevicePluginServicer) -> list[grpc.GenericRpcHandler]:
    """What serves `servicer`; the same for each of its incarnations."""
    return [_Served(servicer)]


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
        make_directory(self.socket.parent)
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
