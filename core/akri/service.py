"""A component with `start()` and `stop()`, usable as `async with component:`."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Service:
    """Subclasses implement start and stop; `async with` stops even when the block raises."""

    async def start(self) -> None:
        raise NotImplementedError

    async def stop(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()
