"""An embedded handler the test drives: it yields (or raises) whatever is put in its feed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping

from akri.discovery.model import Device


class Scripted:
    def __init__(self, name: str = "scripted", shared: bool = True) -> None:
        self.name = name
        self.shared = shared
        self.feed: asyncio.Queue[list[Device] | Exception] = asyncio.Queue()
        self.started = 0
        self.closed = 0

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        self.started += 1
        try:
            while True:
                item = await self.feed.get()
                if isinstance(item, Exception):
                    raise item
                yield item
        finally:
            self.closed += 1
