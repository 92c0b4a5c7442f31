"""A de-duplicating work queue of keys, as controllers use to turn events into reconciles.

A burst of events about one object queues its key once; a key is never handed to two workers at
once; a key added while it is being processed is processed again afterwards, so no change is
missed. `add_after` schedules a later look (backoff, grace periods) and keeps the earliest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(self) -> None:
        self._queue: dict[K, None] = {}  # insertion-ordered set
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._ready = asyncio.Event()

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, key: K) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue[key] = None
            self._ready.set()

    def add_after(self, key: K, delay: float) -> None:
        """Add `key` after `delay` seconds, unless an earlier add is already scheduled."""
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        when = loop.time() + delay
        timer = self._timers.get(key)
        if timer is not None and not timer.cancelled() and timer.when() <= when:
            return
        if timer is not None:
            timer.cancel()
        self._timers[key] = loop.call_at(when, self._fire, key)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def get(self) -> K:
        """The next key; the caller must call `done(key)` when it has processed it."""
        while not self._queue:
            self._ready.clear()
            await self._ready.wait()
        key = next(iter(self._queue))
        del self._queue[key]
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue[key] = None
            self._ready.set()

    def close(self) -> None:
        """Cancel scheduled adds (their loop may be closing)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
