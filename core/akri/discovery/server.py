"""Serve any embedded handler as an external one over `discovery.proto`, kept registered.

The handler serves `DiscoveryHandler.Discover` on `<dir>/<name>.sock`, or on TCP when `pod_ip`
is given (registered as `http://<pod_ip>:<port>`), then registers with the agent's
`<dir>/agent-registration.sock`. An agent restart loses its registrations (Akri issue #558), so
the handler registers again whenever its connection to the agent drops or the agent's socket is
re-created, and retries failed registrations with capped backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import grpc

from akri import grpc_servers
from akri.backoff import Backoff
from akri.discovery.convert import properties_from_proto, response_to_proto
from akri.discovery.endpoints import NETWORK, UDS
from akri.discovery.handler import DiscoveryHandler
from akri.discovery.model import DiscoveryError, InvalidDetails
from akri.discovery.registration import registration_socket
from akri.owner_only import make_directory
from akri.proto.discovery.v0 import discovery_pb2 as pb
from akri.proto.discovery.v0.discovery_pb2_grpc import (
    DiscoveryHandlerServicer,
    RegistrationStub,
    add_DiscoveryHandlerServicer_to_server,
)
from akri.service import Service
from akri.unix_sockets import add_port

log = logging.getLogger(__name__)

DEFAULT_PORT = 10000
REGISTER_TIMEOUT_S = 5.0
_NO_IDLE_TIMEOUT = [("grpc.client_idle_timeout_ms", 2**31 - 1)]
"""An idle channel would drop its connection and look like an agent restart."""

SocketIdentity = tuple[int, int, int]


class HandlerServicer(DiscoveryHandlerServicer):
    """`Discover` for one handler: each device list becomes one complete `DiscoverResponse`."""

    def __init__(self, handler: DiscoveryHandler) -> None:
        self._handler = handler

    async def Discover(
        self, request: pb.DiscoverRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[pb.DiscoverResponse]:
        lists = self._handler.discover(request.discovery_details, properties_from_proto(request))
        async with contextlib.aclosing(lists):
            try:
                async for devices in lists:
                    yield response_to_proto(devices)
            except InvalidDetails as error:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(error))
            except DiscoveryError as error:
                await context.abort(grpc.StatusCode.UNAVAILABLE, str(error))


async def serve(handler: DiscoveryHandler, address: str) -> tuple[grpc.aio.Server, int]:
    """A started server for `handler` on a gRPC `address`, and the port it bound (0 for UDS)."""
    server = grpc.aio.server()
    add_DiscoveryHandlerServicer_to_server(HandlerServicer(handler), server)
    port = add_port(server, address)
    await grpc_servers.start(server)
    return server, port


def socket_identity(path: Path) -> SocketIdentity | None:
    """Changes when the socket file is re-created (a restarted agent binds a new one)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_ctime_ns


def network_endpoint(pod_ip: str, port: int) -> str:
    host = f"[{pod_ip}]" if ":" in pod_ip else pod_ip
    return f"http://{host}:{port}"


class HandlerServer(Service):
    """Serves `handler` and keeps it registered; an async context manager."""

    def __init__(
        self,
        handler: DiscoveryHandler,
        directory: Path,
        *,
        pod_ip: str | None = None,
        port: int = DEFAULT_PORT,
        backoff: Callable[[], Backoff] = Backoff,
        watch_interval: float = 1.0,
    ) -> None:
        self.endpoint = ""
        """Where the handler serves, as registered; set by `start`."""
        self._handler = handler
        self._socket = directory / f"{handler.name}.sock"
        self._agent = registration_socket(directory)
        self._pod_ip = pod_ip
        self._port = port
        self._backoff = backoff
        self._watch_interval = watch_interval
        self._server: grpc.aio.Server | None = None
        self._registering: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._pod_ip:
            self._server, port = await serve(self._handler, f"0.0.0.0:{self._port}")
            self.endpoint, endpoint_type = network_endpoint(self._pod_ip, port), NETWORK
        else:
            make_directory(self._socket.parent)
            self._socket.unlink(missing_ok=True)
            self._server, _ = await serve(self._handler, f"unix://{self._socket}")
            self.endpoint, endpoint_type = str(self._socket), UDS
        log.info("serving discovery handler %s on %s", self._handler.name, self.endpoint)
        request = pb.RegisterDiscoveryHandlerRequest(
            name=self._handler.name,
            endpoint=self.endpoint,
            endpoint_type=endpoint_type,
            shared=self._handler.shared,
        )
        self._registering = asyncio.create_task(
            self._keep_registered(request), name=f"register {self._handler.name}"
        )

    async def stop(self) -> None:
        if self._registering is not None:
            self._registering.cancel()
            await asyncio.gather(self._registering, return_exceptions=True)
            self._registering = None
        if self._server is not None:
            await self._server.stop(grace=None)
            self._server = None
            if not self._pod_ip:
                self._socket.unlink(missing_ok=True)

    async def _keep_registered(self, request: pb.RegisterDiscoveryHandlerRequest) -> None:
        backoff = self._backoff()
        while True:
            identity = socket_identity(self._agent)
            async with grpc.aio.insecure_channel(
                f"unix://{self._agent}", options=_NO_IDLE_TIMEOUT
            ) as channel:
                try:
                    await RegistrationStub(channel).RegisterDiscoveryHandler(
                        request, timeout=REGISTER_TIMEOUT_S
                    )
                except grpc.aio.AioRpcError as error:
                    delay = backoff.next_delay()
                    log.warning(
                        "registration with %s failed (%s: %s); retrying in %.1f s",
                        self._agent,
                        error.code().name,
                        error.details(),
                        delay,
                    )
                else:
                    backoff.reset()
                    log.info(
                        "registered %s at %s with %s", request.name, self.endpoint, self._agent
                    )
                    await self._until_agent_restarts(channel, identity)
                    continue
            await asyncio.sleep(delay)

    async def _until_agent_restarts(
        self, channel: grpc.aio.Channel, identity: SocketIdentity | None
    ) -> None:
        """Return when the connection to the agent drops or its socket is re-created."""
        while True:
            state = channel.get_state()
            if (
                state is not grpc.ChannelConnectivity.READY
                or socket_identity(self._agent) != identity
            ):
                log.info("agent at %s went away; registering again", self._agent)
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._watch_interval):
                    await channel.wait_for_state_change(state)
