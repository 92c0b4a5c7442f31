"""The `akri-discovery-handler` console script, run as a real process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from akri.agent.discovery.external import ExternalHandler
from akri.agent.discovery.registry import HandlerRegistry
from tests.discovery.conftest import DEADLINE_S, Recorder, SessionFactory, only, registered
from tests.support import running

SCRIPT = Path(sys.executable).with_name("akri-discovery-handler")


async def spawn(*args: str, **env: str) -> asyncio.subprocess.Process:
    environ = {k: v for k, v in os.environ.items() if k != "POD_IP"} | env
    return await asyncio.create_subprocess_exec(
        str(SCRIPT),
        *args,
        env=environ,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )


async def finish(process: asyncio.subprocess.Process) -> tuple[int, str]:
    async with asyncio.timeout(DEADLINE_S):
        _, stderr = await process.communicate()
    assert process.returncode is not None
    return process.returncode, stderr.decode()


@contextlib.asynccontextmanager
async def handler_process(*args: str, **env: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """The script running for the block; SIGTERM after it unless the test already ended it."""
    process = await spawn(*args, **env)
    try:
        yield process
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
            await finish(process)


@pytest.mark.usefixtures("agent")
async def test_registers_serves_and_exits_cleanly_on_sigterm(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    availability = socket_dir / "availability.txt"
    async with handler_process(
        "debugEcho",
        "--registration-dir",
        str(socket_dir),
        "--no-shared",
        DEBUG_ECHO_AVAILABILITY_FILE=str(availability),
    ) as process:
        await registered(registry, "debugEcho")
        handler = only(registry, "debugEcho")
        assert isinstance(handler, ExternalHandler)
        assert handler.endpoint.address == str(socket_dir / "debugEcho.sock")
        assert handler.shared is False
        async with running(make_session().run()):
            await recorder.until_ids("foo0", "foo1")
            availability.write_text("foo0\n")
            await recorder.until_ids("foo1")
        process.send_signal(signal.SIGTERM)
        code, stderr = await finish(process)
    assert code == 0, stderr
    assert not (socket_dir / "debugEcho.sock").exists()


@pytest.mark.usefixtures("agent")
async def test_serves_on_tcp_when_pod_ip_is_set(
    registry: HandlerRegistry, socket_dir: Path
) -> None:
    async with handler_process(
        "debugEcho",
        "--port",
        "0",
        POD_IP="127.0.0.1",
        DISCOVERY_HANDLERS_DIRECTORY=str(socket_dir),
        DEBUG_ECHO_INSTANCES_SHARED="false",
    ):
        await registered(registry, "debugEcho")
        handler = only(registry, "debugEcho")
        assert isinstance(handler, ExternalHandler)
        assert handler.endpoint.address.startswith("http://127.0.0.1:")
        assert handler.shared is False
        lists = handler.discover("descriptions: [cam]", {})
        assert [d.id for d in await anext(lists)] == ["cam"]
        await lists.aclose()


async def test_unknown_handler_exits_2_naming_the_choices() -> None:
    code, stderr = await finish(await spawn("nope"))
    assert code == 2
    assert "invalid choice: 'nope'" in stderr
    assert "debugEcho" in stderr


async def test_bad_shared_flag_exits_2(socket_dir: Path) -> None:
    process = await spawn(
        "debugEcho", "--registration-dir", str(socket_dir), DEBUG_ECHO_INSTANCES_SHARED="maybe"
    )
    code, stderr = await finish(process)
    assert code == 2
    assert "DEBUG_ECHO_INSTANCES_SHARED must be true or false, got 'maybe'" in stderr
