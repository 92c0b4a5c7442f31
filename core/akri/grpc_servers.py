"""Starting a gRPC server so that a start cancelled midway leaves nothing serving."""

from __future__ import annotations

import asyncio

import grpc

from akri.tasks import finish


async def start(server: grpc.aio.Server) -> None:
    """`await server.start()`, run to its end even when cancelled meanwhile; then a cancelled
    start stops the server again and raises.

    grpc serves from the first step of `start()`, and a start cancelled midway leaves the
    server serving (a later stop fails on its half-started state) with no caller to stop it:
    its sockets, its tasks and grpc's poller thread would stay for the life of the process.
    """
    try:
        await finish(server.start())
    except asyncio.CancelledError:
        await finish(server.stop(None))
        raise
