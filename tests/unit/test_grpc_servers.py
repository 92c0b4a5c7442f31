"""`grpc_servers.start`: a start cancelled at any step leaves no server serving."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import grpc
import pytest

from akri import grpc_servers
from akri.unix_sockets import add_port


@pytest.mark.parametrize("steps", range(1, 5))
async def test_a_start_cancelled_at_any_step_leaves_nothing_serving(
    socket_dir: Path, steps: int
) -> None:
    """The suite's leak check fails too if the server keeps its threads or sockets."""
    socket = socket_dir / "server.sock"
    server = grpc.aio.server()
    add_port(server, f"unix://{socket}")
    starting = asyncio.create_task(grpc_servers.start(server))
    for _ in range(steps):
        await asyncio.sleep(0)  # one turn of the loop: the cancel lands at each step
    starting.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await starting
    await server.stop(None)  # grpc's own stop fails on a server whose start was cut short
    async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
        call = channel.unary_unary("/akri.Test/Call", bytes, bytes)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await call(b"", timeout=5)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # not UNIMPLEMENTED: not served
