"""When a broker that failed may be created again: capped exponential backoff per broker.

Akri recreated a broker rejected at admission at once, and the kubelet rejected it again: a
create/delete loop (#801). Here each failure of a broker (one per Pod uid, however often the
controller sees that Pod) doubles the wait before its next creation, up to a cap; a broker that
runs resets it. Pure bookkeeping with an injected clock, so it is tested without waiting.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from akri.backoff import Backoff

K = TypeVar("K", bound=Hashable)


@dataclass
class _History:
    backoff: Backoff
    not_before: float = 0.0
    attempts: set[str] = field(default_factory=set)


class Retries(Generic[K]):
    """Failure history per key (e.g. namespace and broker name)."""

    def __init__(
        self,
        backoff: Callable[[], Backoff],
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self._backoff = backoff
        self._clock = clock
        self._rng = rng
        self._histories: dict[K, _History] = {}

    def failed(self, key: K, attempt: str | None = None) -> float:
        """Count a failure of `key` and return the wait before the next try.

        `attempt` (e.g. the Pod's uid) makes this idempotent: seeing the same failed Pod again
        before its deletion shows up does not count twice.
        """
        history = self._histories.setdefault(key, _History(self._backoff()))
        if attempt is not None and attempt in history.attempts:
            return self.wait(key)
        if attempt is not None:
            history.attempts.add(attempt)
        delay = history.backoff.next_delay(self._rng)
        history.not_before = self._clock() + delay
        return delay

    def wait(self, key: K) -> float:
        """Seconds until `key` may be tried again; 0 when it may be tried now."""
        history = self._histories.get(key)
        return 0.0 if history is None else max(0.0, history.not_before - self._clock())

    def succeeded(self, key: K) -> None:
        """`key` works: its next failure starts from the initial delay again."""
        self._histories.pop(key, None)

    def forget(self, keep: Callable[[K], bool]) -> None:
        """Drop the history of keys that no longer matter (their Instance is gone)."""
        self._histories = {k: h for k, h in self._histories.items() if keep(k)}
