"""Per-kind event history and live watch subscriptions.

A watch resumes from any resourceVersion still covered by the bounded history; older ones get
410, exactly the case a reflector must handle by re-listing. Events are immutable snapshots
shared by every subscriber.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from akri.sim.apiserver.errors import expired

JSON = dict[str, Any]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(frozen=True)
class WatchEvent:
    """A change; `previous` is the state before a MODIFIED, for selector transitions."""

    type: str
    obj: JSON
    rv: int
    previous: JSON | None = None
    lines: dict[tuple[str, str], bytes] = field(default_factory=dict, compare=False, repr=False)
    """The watch lines sent for it, by (event type, apiVersion): every watcher that gets the
    same line gets the same bytes, encoded once (dropped with the event from the history)."""


class Tick:
    """A wake-up the stream reading a feed asked for (a bookmark or its end is due)."""


TICK = Tick()


class Subscription:
    """A live feed; `None` in the queue means the server ended the stream."""

    def __init__(self, hub: WatchHub) -> None:
        self.queue: asyncio.Queue[WatchEvent | Tick | None] = asyncio.Queue()
        self._hub = hub

    def close(self) -> None:
        self._hub.unsubscribe(self)


class WatchHub:
    """History and subscribers of one kind."""

    def __init__(self, limit: int) -> None:
        self._history: deque[WatchEvent] = deque()
        self._limit = limit
        self._floor = 0  # resuming from a version below this would miss evicted events
        self._subscribers: set[Subscription] = set()

    def publish(self, event: WatchEvent) -> None:
        self._history.append(event)
        while len(self._history) > self._limit:
            self._floor = self._history.popleft().rv
        for subscriber in self._subscribers:
            subscriber.queue.put_nowait(event)

    def subscribe(self, since: int | None) -> tuple[list[WatchEvent], Subscription]:
        """Events after `since` still to deliver, and the live feed that follows them."""
        replay: list[WatchEvent] = []
        if since is not None:
            if since < self._floor:
                raise expired(f"too old resource version: {since} ({self._floor})")
            replay = [event for event in self._history if event.rv > since]
        subscription = Subscription(self)
        self._subscribers.add(subscription)
        return replay, subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscribers.discard(subscription)

    def end_all(self) -> None:
        """End every live stream (kind removed, server stopping)."""
        for subscriber in self._subscribers:
            subscriber.queue.put_nowait(None)
        self._subscribers.clear()
