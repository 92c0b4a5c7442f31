"""Helpers every integration test shares: waiting on a condition with a deadline, never a sleep."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, overload

import pytest

T = TypeVar("T")
DEADLINE_S = 10.0


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
