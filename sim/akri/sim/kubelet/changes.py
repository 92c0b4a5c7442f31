"""A change counter that coroutines can wait on, with a deadline, instead of polling."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Changes:
    """Bumped on every observable change; `wait_for` re-checks a condition after each bump."""

    def __init__(self) -> None:
        self.version = 0
        self._event = asyncio.Event()

    def notify(self) -> None:
        self.version += 1
        self._event.set()
        self._event = asyncio.Event()

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Return once `condition()` holds; bound it with `asyncio.timeout`."""
        while not condition():
            await self._event.wait()
