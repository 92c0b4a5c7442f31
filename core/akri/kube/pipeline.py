"""Many writes to the API server, pipelined through an adaptive window (`akri.window`).

A thousand new devices are a thousand creates: sent one by one they take a thousand round
trips, sent all at once they are the burst an API server throttles. Here at most the window's
limit are in flight; the window grows while the server answers promptly and shrinks when it
pushes back. A write refused for load (429, 503, 504) is sent again after the server's
Retry-After (or a capped backoff), so it still is one write when it lands; any other failure
is raised to the caller. Writes must be safe to send again after a refusal (a create that
meets 409 Conflict on its second attempt is the caller's to handle).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.window import AdaptiveWindow, Ticket

log = logging.getLogger(__name__)

T = TypeVar("T")
X = TypeVar("X")

PUSHBACK = frozenset({429, 503, 504})
"""Answers that say the server is overloaded and the write was not done: send it again."""
ATTEMPTS = 10
"""Sends of one write before its refusal is raised (client-go retries up to 10 times)."""


def throttle_backoff() -> Backoff:
    return Backoff(initial=0.2, maximum=10.0)


def retry_after(error: ApiException, maximum: float) -> float | None:
    """The server's Retry-After in seconds (capped), if it sent one as a number."""
    value = error.headers.get("Retry-After") if error.headers else None
    try:
        return None if value is None else min(max(float(value), 0.0), maximum)
    except ValueError:
        return None


class Pipeline:
    """Writes through one window; share one per API server and kind of write."""

    def __init__(
        self,
        window: AdaptiveWindow | None = None,
        *,
        attempts: int = ATTEMPTS,
        backoff: Callable[[], Backoff] = throttle_backoff,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.window = window or AdaptiveWindow()
        self._attempts = attempts
        self._backoff = backoff
        self._clock = clock
        self._released = asyncio.Event()

    async def submit(self, write: Callable[[], Awaitable[T]]) -> T:
        """Send one write when the window has room; raises what it finally raised."""
        return await self._send(await self._admit(), write)

    async def each(self, items: Iterable[X], write: Callable[[X], Awaitable[object]]) -> None:
        """`write(item)` for every item, each started when the window has room.

        After a failure no further item is started; those in flight finish, then the first
        failure is raised. The items not written are the caller's next round.
        """
        failures: list[Exception] = []

        async def send(ticket: Ticket, item: X) -> None:
            try:
                await self._send(ticket, lambda: write(item))
            except Exception as error:
                failures.append(error)

        tasks: set[asyncio.Task[None]] = set()
        try:
            for item in items:
                ticket = await self._admit()
                if failures:
                    self._done(ticket)
                    break
                task = asyncio.create_task(send(ticket, item))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
        finally:
            await asyncio.gather(*tasks, return_exceptions=True)
        if failures:
            raise failures[0]

    async def _admit(self) -> Ticket:
        while not self.window.room:
            self._released.clear()
            await self._released.wait()
        return self.window.admit()

    def _done(
        self, ticket: Ticket, *, latency: float | None = None, pushback: bool = False
    ) -> None:
        """Tell the window how the request of `ticket` ended, and the waiters that a place
        may have opened."""
        if latency is not None:
            self.window.succeeded(ticket, latency)
        elif pushback:
            self.window.throttled(ticket)
        else:
            self.window.failed(ticket)
        self._released.set()

    async def _send(self, ticket: Ticket, write: Callable[[], Awaitable[T]]) -> T:
        backoff = self._backoff()
        attempt = 1
        while True:
            started = self._clock()
            try:
                result = await write()
            except ApiException as error:
                self._done(ticket, pushback=error.status in PUSHBACK)
                if error.status not in PUSHBACK or attempt == self._attempts:
                    raise
                delay = retry_after(error, backoff.maximum) or backoff.next_delay()
                log.debug("API answered %s; sending again in %.2fs", error.status, delay)
            except TimeoutError:
                self._done(ticket, pushback=True)
                raise
            except BaseException:
                self._done(ticket)
                raise
            else:
                self._done(ticket, latency=self._clock() - started)
                return result
            await asyncio.sleep(delay)
            attempt += 1
            ticket = await self._admit()
