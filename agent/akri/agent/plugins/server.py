"""One incarnation of a device plugin: its servicer on a fresh socket, registered with the kubelet.

Registration happens only once the socket is served, as the kubelet dials back at once. Stopping
closes the server, which ends ListAndWatch (the only way a plugin deregisters), and removes the
socket so nothing dials a dead endpoint.

A node runs a server per Instance, so each one is kept small: the service is added through a
generic handler only. grpc's registered-method fast path, which the generated code adds as
well, costs about 20 KB per server and buys nothing at a few calls per minute. The generic
handler makes a method's handler when it is called, from the service's descriptor read once,
instead of holding five handlers and their bound methods per plugin (about 2 KB each, 2 MB on
a node with a thousand Instances).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import grpc
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from akri import grpc_servers
from akri.agent.plugins.sockets import new_nonce, socket_name
from akri.owner_only import make_directory
from akri.proto.deviceplugin.v1beta1 import api_pb2
from akri.proto.deviceplugin.v1beta1.api_pb2 import DevicePluginOptions, RegisterRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginServicer
from akri.proto.deviceplugin.v1beta1.constants import VERSION
from akri.unix_sockets import LOCAL_PEER_OPTIONS, add_port

log = logging.getLogger(__name__)

Handler: TypeAlias = "grpc.RpcMethodHandler[Any, Any]"

OPTIONS = DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=False)
"""What an akri-py plugin offers unless it says otherwise: Allocate decides, nothing else."""


@dataclass(frozen=True, slots=True)
class _Method:
    """One method of the DevicePlugin service, as its descriptor declares it."""

    name: str
    """The rpc's name, which is also the servicer's method."""
    handler: Callable[..., Handler]
    """grpc's handler constructor for the method's kind of streaming."""
    request: type[Message]
    response: type[Message]

    def bound(self, servicer: DevicePluginServicer) -> Handler:
        return self.handler(
            getattr(servicer, self.name),
            request_deserializer=self.request.FromString,
            response_serializer=self.response.SerializeToString,
        )


_HANDLERS: dict[tuple[bool, bool], Callable[..., Handler]] = {
    (False, False): grpc.unary_unary_rpc_method_handler,
    (False, True): grpc.unary_stream_rpc_method_handler,
    (True, False): grpc.stream_unary_rpc_method_handler,
    (True, True): grpc.stream_stream_rpc_method_handler,
}
"""grpc's handler constructors by (request, response) streaming."""


def _methods(service: ServiceDescriptor) -> dict[str, _Method]:
    """Each method of `service` by its path on the wire."""
    return {
        f"/{service.full_name}/{method.name}": _Method(
            method.name,
            _HANDLERS[method.client_streaming, method.server_streaming],
            GetMessageClass(method.input_type),
            GetMessageClass(method.output_type),
        )
        for method in service.methods
    }


_METHODS = _methods(api_pb2.DESCRIPTOR.services_by_name["DevicePlugin"])


class _Served(grpc.GenericRpcHandler):
    """Serves one servicer's methods."""

    __slots__ = ("_servicer",)

    def __init__(self, servicer: DevicePluginServicer) -> None:
        self._servicer = servicer

    def service(self, details: grpc.HandlerCallDetails) -> Handler | None:
        method = _METHODS.get(details.method)
        if method is None:
            return None  # grpc answers UNIMPLEMENTED
        return method.bound(self._servicer)


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
