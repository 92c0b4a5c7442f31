"""Capped exponential backoff with jitter: every retry loop in akri-py waits through this.

Pure: it computes delays, the caller sleeps. Akri's uncapped backoff let a long outage push
retries out to hours; here the delay never exceeds `maximum`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Backoff:
    initial: float = 0.5
    maximum: float = 30.0
    factor: float = 2.0
    jitter: float = 0.2  # +- this fraction, so many nodes retrying do not move in lockstep
    attempts: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if not 0 < self.initial <= self.maximum or self.factor < 1 or not 0 <= self.jitter < 1:
            raise ValueError(f"invalid backoff parameters: {self}")

    def next_delay(self, rng: random.Random | None = None) -> float:
        """The delay before the next attempt; each call counts one failed attempt."""
        base = min(self.maximum, self.initial * self.factor ** min(self.attempts, 64))
        self.attempts += 1
        spread = (rng or random).uniform(-self.jitter, self.jitter)
        return min(self.maximum, base * (1 + spread))

    def reset(self) -> None:
        """Call after a success, so the next failure starts from `initial` again."""
        self.attempts = 0
