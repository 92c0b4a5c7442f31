"""The agent's `v0.Registration` service on `<dir>/agent-registration.sock`.

External handlers dial it to announce their endpoint; each accepted registration becomes an
`ExternalHandler` in the registry, replacing an earlier one with the same name and endpoint.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import grpc

from akri import grpc_servers
from akri.agent.discovery.external import ExternalHandler
from akri.agent.discovery.registry import HandlerRegistry
from akri.discovery.endpoints import UDS, parse_endpoint
from akri.discovery.registration import DEFAULT_DIRECTORY, registration_socket
from akri.owner_only import make_directory
from akri.proto.discovery.v0.discovery_pb2 import Empty, RegisterDiscoveryHandlerRequest
from akri.proto.discovery.v0.discovery_pb2_grpc import (
    RegistrationServicer,
    add_RegistrationServicer_to_server,
)
from akri.service import Service
from akri.unix_sockets import add_port

log = logging.getLogger(__name__)

MAX_REQUEST_BYTES = 64 * 1024
"""A registration is a name and an endpoint; anything much larger is refused unread."""


def handler_for(request: RegisterDiscoveryHandlerRequest) -> ExternalHandler:
    """The handler a registration announces; ValueError when it could never be used."""
    if not request.name:
        raise ValueError("discovery handler name is empty")
    endpoint = parse_endpoint(request.endpoint, request.endpoint_type)
    if request.endpoint_type == UDS and not os.path.exists(request.endpoint):
        raise ValueError(f"unix socket {request.endpoint!r} does not exist")
    return ExternalHandler(request.name, endpoint, request.shared)


class _Registration(RegistrationServicer):
    def __init__(self, registry: HandlerRegistry) -> None:
        self._registry = registry

    async def RegisterDiscoveryHandler(
        self, request: RegisterDiscoveryHandlerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> Empty:
        try:
            handler = handler_for(request)
        except ValueError as error:
            reason = str(error)  # log text, not the error: its traceback would pin the call
            log.warning("registration of discovery handler %r refused: %s", request.name, reason)
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, reason)
        self._registry.add(handler, handler.endpoint.address)
        return Empty()


class RegistrationServer(Service):
    """Serves registrations into `registry` until stopped; use as an async context manager."""

    def __init__(self, registry: HandlerRegistry, directory: Path = DEFAULT_DIRECTORY) -> None:
        self.socket = registration_socket(directory)
        self._registry = registry
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        """Bind a fresh socket: a stale file from a previous agent would refuse connections."""
        make_directory(self.socket.parent)
        self.socket.unlink(missing_ok=True)
        server = grpc.aio.server(options=[("grpc.max_receive_message_length", MAX_REQUEST_BYTES)])
        add_RegistrationServicer_to_server(_Registration(self._registry), server)
        add_port(server, f"unix://{self.socket}")
        await grpc_servers.start(server)
        self._server = server
        log.info("serving discovery handler registration on %s", self.socket)

    async def stop(self) -> None:
        """Stop and remove the socket, so handlers wait for the next agent instead of failing."""
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None
            self.socket.unlink(missing_ok=True)
