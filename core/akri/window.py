"""How many writes to keep in flight to the API server: a window that adapts (AIMD).

A fixed number of concurrent creates is either too few for an API server 200 ms away (a
thousand Instances at 8 in flight took 29 s on a cluster) or too many for one that is
overloaded. The window grows while answers come back as fast as the fastest seen (each
success adds 1 while starting, then 1 per window's worth), and shrinks when the server
pushes back: halved on a 429 or an unavailable server, cut by a tenth when answers take
more than `tolerance` times the fastest (requests are queueing). It never leaves
[minimum, maximum], so there is no unbounded burst.

A decrease is made once per round trip: failures of requests sent before the last decrease
reflect the old window and are not counted again (as TCP does with losses).

Pure bookkeeping: the caller times each request and reports it; see `akri.kube.pipeline`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

THROTTLED_FACTOR = 0.5
SLOW_FACTOR = 0.9


@dataclass(frozen=True)
class Ticket:
    """One admitted request: the decrease epoch it was sent in."""

    epoch: int


@dataclass
class AdaptiveWindow:
    initial: int = 8
    minimum: int = 1
    maximum: int = 64
    tolerance: float = 2.0
    """Latency above this many times the fastest one seen means requests are queueing."""
    floor: float = 0.05
    """Latencies below this (seconds) never count as queueing: the server answers faster than
    a writer uses it."""
    limit: float = field(init=False)
    starting: bool = field(default=True, init=False)
    """Growing by one per success (slow start) until the first decrease."""
    in_flight: int = field(default=0, init=False)
    fastest: float = field(default=math.inf, init=False)
    decreases: int = field(default=0, init=False)
    """How often the window shrank (for metrics and tests)."""

    def __post_init__(self) -> None:
        if not 1 <= self.minimum <= self.initial <= self.maximum or self.tolerance <= 1:
            raise ValueError(
                f"invalid window: minimum {self.minimum}, initial {self.initial}, maximum "
                f"{self.maximum}, tolerance {self.tolerance}"
            )
        self.limit = float(self.initial)

    @property
    def room(self) -> bool:
        """Whether another request may be sent now."""
        return self.in_flight < int(self.limit)

    def admit(self) -> Ticket:
        """A request is sent (the caller checked `room`)."""
        self.in_flight += 1
        return Ticket(self.decreases)

    def succeeded(self, ticket: Ticket, latency: float) -> None:
        """The request of `ticket` was answered after `latency` seconds."""
        self.in_flight -= 1
        self.fastest = min(self.fastest, latency)
        if latency > max(self.floor, self.tolerance * self.fastest):
            self._decrease(ticket, SLOW_FACTOR)
        elif self.starting:
            self._set(self.limit + 1)
        else:
            self._set(self.limit + 1 / self.limit)

    def throttled(self, ticket: Ticket) -> None:
        """The server refused the request of `ticket` for load (429, 503) or did not answer."""
        self.in_flight -= 1
        self._decrease(ticket, THROTTLED_FACTOR)

    def failed(self, ticket: Ticket) -> None:
        """The request of `ticket` failed for a reason that says nothing about load."""
        self.in_flight -= 1

    def _decrease(self, ticket: Ticket, factor: float) -> None:
        if ticket.epoch != self.decreases:
            return  # sent before the last decrease: already accounted for
        self.decreases += 1
        self.starting = False
        self._set(self.limit * factor)

    def _set(self, limit: float) -> None:
        self.limit = min(float(self.maximum), max(float(self.minimum), limit))
