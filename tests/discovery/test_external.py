"""External handlers over real gRPC sockets: registration, discovery, failures, restarts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import grpc
import pytest

from akri.agent.discovery.external import ExternalHandler
from akri.agent.discovery.registration import RegistrationServer
from akri.agent.discovery.registry import HandlerRegistry
from akri.api import ConditionType
from akri.discovery.endpoints import NETWORK, UDS, parse_endpoint
from akri.discovery.model import Device, HandlerUnavailable, InvalidDetails
from akri.discovery.server import HandlerServer, serve
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.proto.discovery.v0.discovery_pb2 import RegisterDiscoveryHandlerRequest
from akri.proto.discovery.v0.discovery_pb2_grpc import RegistrationStub
from tests.discovery.conftest import (
    DETAILS,
    Recorder,
    SessionFactory,
    fast_backoff,
    only,
    registered,
)
from tests.discovery.scripted import Scripted
from tests.support import running


def echo(**options: Any) -> DebugEcho:
    return DebugEcho(availability_file=None, **options)


def external(socket_dir: Path, **options: Any) -> HandlerServer:
    options.setdefault("backoff", fast_backoff)
    options.setdefault("watch_interval", 0.05)
    handler = options.pop("handler", None) or echo()
    return HandlerServer(handler, socket_dir, **options)


def condition(recorder: Recorder) -> ConditionType | None:
    return recorder.status.condition if recorder.status else None


@pytest.mark.usefixtures("agent")
async def test_external_handler_registers_and_streams(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    async with external(socket_dir, handler=echo(shared=False)) as server:
        await registered(registry, "debugEcho")
        handler = only(registry, "debugEcho")
        assert isinstance(handler, ExternalHandler)
        assert handler.endpoint.address == server.endpoint == str(socket_dir / "debugEcho.sock")
        assert handler.shared is False
        async with running(make_session().run()):
            await recorder.until_ids("foo0", "foo1")
            await recorder.until(lambda r: condition(r) is ConditionType.READY)
    assert recorder.lists[-1][1].properties == {"DEBUG_ECHO_DESCRIPTION": "foo1"}


@pytest.mark.usefixtures("agent")
async def test_two_endpoints_with_one_name_are_merged(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    on_socket, on_tcp = echo(), echo()
    on_socket.set_offline(["foo1"])
    on_tcp.set_offline(["foo0"])
    async with (
        external(socket_dir, handler=on_socket),
        external(socket_dir, handler=on_tcp, pod_ip="127.0.0.1", port=0) as tcp,
    ):
        await registered(registry, "debugEcho", count=2)
        assert tcp.endpoint.startswith("http://127.0.0.1:")
        assert set(registry.handlers("debugEcho")) == {
            str(socket_dir / "debugEcho.sock"),
            tcp.endpoint,
        }
        async with running(make_session().run()):
            await recorder.until_ids("foo0", "foo1")
            on_socket.set_offline()  # foo0 now from both endpoints: still one device
            on_tcp.set_offline(everything=True)
            await recorder.until_ids("foo0", "foo1")
            on_socket.set_offline(["foo0"])
            await recorder.until_ids("foo1")
    assert all(len(devices) == len({d.id for d in devices}) for devices in recorder.lists)


@pytest.mark.usefixtures("agent")
async def test_bad_details_come_back_as_invalid_details(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    async with external(socket_dir):
        await registered(registry, "debugEcho")
        lists = only(registry, "debugEcho").discover("descriptions: [1]", {})
        with pytest.raises(InvalidDetails, match=r"descriptions\.0: Input should be a valid str"):
            await anext(lists)
        async with running(make_session(details="nope").run()):
            await recorder.until(lambda r: condition(r) is ConditionType.INVALID_DETAILS)
    assert recorder.status is not None
    assert "debugEcho discoveryDetails must be a mapping" in recorder.status.message


async def test_a_handler_that_dies_is_retried_and_resumes(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    """Served on TCP without registering, so only the session's retries can find it again."""
    servers: list[grpc.aio.Server] = []

    async def start(port: int) -> int:
        server, bound = await serve(echo(), f"127.0.0.1:{port}")
        servers.append(server)
        return bound

    try:
        port = await start(0)
        handler = ExternalHandler(
            "debugEcho", parse_endpoint(f"http://127.0.0.1:{port}", NETWORK), shared=True
        )
        registry.add(handler, handler.endpoint.address)
        async with running(make_session().run()):
            await recorder.until_ids("foo0", "foo1")
            await servers[0].stop(grace=None)
            await recorder.until_ids()
            await recorder.until(lambda r: condition(r) is ConditionType.HANDLER_UNAVAILABLE)
            await start(port)
            await recorder.until_ids("foo0", "foo1")
            await recorder.until(lambda r: condition(r) is ConditionType.READY)
    finally:
        for server in servers:
            await server.stop(grace=None)


@pytest.mark.usefixtures("agent")
async def test_a_handler_that_dies_and_re_registers_resumes(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    async with running(make_session().run()):
        async with external(socket_dir):
            await recorder.until_ids("foo0", "foo1")
        await recorder.until_ids()
        await recorder.until(lambda r: condition(r) is ConditionType.HANDLER_UNAVAILABLE)
        first = only(registry, "debugEcho")
        async with external(socket_dir):
            await recorder.until(lambda r: only(registry, "debugEcho") is not first)
            await recorder.until_ids("foo0", "foo1")


@pytest.mark.usefixtures("agent")
async def test_an_unreachable_endpoint_is_dropped(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    async with running(make_session(drop_after=0.0).run()):
        async with external(socket_dir):
            await recorder.until_ids("foo0", "foo1")
        await registered(registry, "debugEcho", count=0)
        await recorder.until(lambda r: "no discovery handler named" in str(r.status))


async def test_the_handler_registers_again_when_the_agent_restarts(
    socket_dir: Path,
) -> None:
    first, second = HandlerRegistry(), HandlerRegistry()
    async with external(socket_dir):
        async with RegistrationServer(first, socket_dir):
            await registered(first, "debugEcho")
        async with RegistrationServer(second, socket_dir):
            await registered(second, "debugEcho")


async def test_the_handler_waits_for_an_agent_that_starts_later(
    registry: HandlerRegistry, socket_dir: Path
) -> None:
    async with external(socket_dir) as server:
        async with RegistrationServer(registry, socket_dir):
            await registered(registry, "debugEcho")
        handler = only(registry, "debugEcho")
        assert isinstance(handler, ExternalHandler)
        assert handler.endpoint.address == server.endpoint


async def test_a_stale_registration_socket_is_replaced(
    registry: HandlerRegistry, socket_dir: Path
) -> None:
    stale = socket_dir / "agent-registration.sock"
    stale.write_text("left over by a crashed agent")
    async with RegistrationServer(registry, socket_dir), external(socket_dir):
        await registered(registry, "debugEcho")
    assert not stale.exists()


@pytest.mark.parametrize(
    ("request_fields", "message"),
    [
        (
            {"name": "", "endpoint": "http://10.0.0.1:10000", "endpoint_type": NETWORK},
            "name is empty",
        ),
        ({"name": "h", "endpoint": "h.sock", "endpoint_type": UDS}, "not an absolute path"),
        ({"name": "h", "endpoint": "/nonexistent/h.sock", "endpoint_type": UDS}, "does not exist"),
        (
            {"name": "h", "endpoint": "10.0.0.1:10000", "endpoint_type": NETWORK},
            "http://<ip>:<port>",
        ),
    ],
)
async def test_invalid_registrations_are_refused(
    registry: HandlerRegistry,
    agent: RegistrationServer,
    request_fields: dict[str, Any],
    message: str,
) -> None:
    async with grpc.aio.insecure_channel(f"unix://{agent.socket}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await RegistrationStub(channel).RegisterDiscoveryHandler(
                RegisterDiscoveryHandlerRequest(**request_fields)
            )
    assert caught.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert message in (caught.value.details() or "")
    assert registry.names() == set()


async def test_a_handler_failure_comes_back_as_handler_unavailable() -> None:
    failing = Scripted("debugEcho")
    server, port = await serve(failing, "127.0.0.1:0")
    try:
        handler = ExternalHandler(
            "debugEcho", parse_endpoint(f"http://127.0.0.1:{port}", NETWORK), shared=True
        )
        lists = handler.discover(DETAILS, {"user": b"admin"})
        failing.feed.put_nowait([Device("a")])
        assert await anext(lists) == [Device("a")]
        failing.feed.put_nowait(HandlerUnavailable("camera bus reset"))
        with pytest.raises(HandlerUnavailable, match="UNAVAILABLE: camera bus reset"):
            await anext(lists)
    finally:
        await server.stop(grace=None)
