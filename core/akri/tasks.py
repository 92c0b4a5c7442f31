"""Cleanup that must run to its end, however often its caller is cancelled meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any


async def finish(*cleanups: Awaitable[Any]) -> None:
    """Run `cleanups` (coroutines, or tasks already running) until every one is done, even
    when cancelled meanwhile; that cancellation is raised once they are. Their outcomes are
    not raised here (asyncio logs an exception nobody retrieves).

    A cancelled `await` or `gather` would cancel them along with the waiter, and a task
    cancelled before its first step never runs at all: a component stopped twice in a row (by
    its owner, then with the owner) would leave what it was stopping, e.g. a gRPC server,
    running for good.
    """
    cancelled = False
    pending = {asyncio.ensure_future(cleanup) for cleanup in cleanups}
    while pending:
        try:
            _, pending = await asyncio.wait(pending)
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
