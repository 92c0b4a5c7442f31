"""Helpers every integration test shares: waiting on a condition with a deadline, never a sleep."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import os
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar, overload

import pytest

from akri.sim.podnet.cluster import TOOLS

T = TypeVar("T")
DEADLINE_S = 30.0  # generous: only a hang should reach it, on a loaded machine too


@overload
async def eventually(
    probe: Callable[[], Awaitable[T | None]], what: str, deadline_s: float = ...
) -> T: ...


@overload
async def eventually(probe: Callable[[], T | None], what: str, deadline_s: float = ...) -> T: ...


async def eventually(probe: Callable[[], Any], what: str, deadline_s: float = DEADLINE_S) -> Any:
    """Poll `probe` (plain or async) until it returns something truthy; fail at the deadline."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_s
    while True:
        outcome = probe()
        result = await outcome if inspect.isawaitable(outcome) else outcome
        if result:
            return result
        if loop.time() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def running(coroutine: Coroutine[Any, Any, None]) -> AsyncIterator[asyncio.Task[None]]:
    """Run `coroutine` as a task for the block, then cancel it and wait for it to finish."""
    task = asyncio.create_task(coroutine)
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


needs_pod_network = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(tool) is None for tool in TOOLS),
    reason="needs root and " + ", ".join(TOOLS),
)
"""The simulated cluster's pods get networks of their own only as root, with these tools."""


def selected_nodes(device: dict[str, Any]) -> list[str]:
    """The nodes a shared DRA device's node selector names: one term, one requirement on the
    `kubernetes.io/hostname` label (the only form a real cluster allocates for several nodes)."""
    (term,) = device["nodeSelector"]["nodeSelectorTerms"]
    assert "matchFields" not in term
    (requirement,) = term["matchExpressions"]
    assert (requirement["key"], requirement["operator"]) == ("kubernetes.io/hostname", "In")
    return list(requirement["values"])
