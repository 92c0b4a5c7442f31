"""Reading a handler's device lists directly, with a deadline instead of a hang."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import TypeVar

from tests.discovery.conftest import DEADLINE_S

T = TypeVar("T")


async def next_list(lists: AsyncGenerator[T, None]) -> T:
    """The next item, or a test failure when none comes within the deadline."""
    async with asyncio.timeout(DEADLINE_S):
        return await anext(lists)
