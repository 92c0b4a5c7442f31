"""Fault injection: latency, forced error codes, held requests, dropped watches and a paused
server.

Reliability tests use this to drive the agent and controller through the failures a real API
server produces (conflicts, expired watches, throttling, outages) on demand and reproducibly.
Rules match requests by verb, resource, namespace and name, and fire a bounded number of
times or with a probability (from a seedable random source).
"""

from __future__ import annotations

import asyncio
import itertools
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

JSON = dict[str, Any]

INJECTABLE_CODES = frozenset({400, 403, 404, 409, 410, 429, 500, 503, 504})


@dataclass(frozen=True)
class RequestInfo:
    """What a rule can match on; `resource` is the plural, `kind` the kind name."""

    verb: str
    resource: str
    kind: str = ""
    group: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass
class FaultRule:
    """Match fields left as None match anything; `status`, `delay` and `hold` say what happens.

    `hold`: a request the rule fires on waits until the rule is removed (then goes on as
    decided), so a test can keep one call in flight for exactly as long as it needs."""

    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    status: int | None = None
    delay: float = 0.0
    count: int | None = None
    probability: float = 1.0
    message: str = "injected fault"
    hold: bool = False
    id: int = 0
    hits: int = field(default=0)

    def __post_init__(self) -> None:
        if self.status is not None and self.status not in INJECTABLE_CODES:
            raise ValueError(f"status {self.status} cannot be injected: {sorted(INJECTABLE_CODES)}")
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError("probability must be within [0, 1]")
        if self.delay < 0:
            raise ValueError("delay must not be negative")

    def selects(self, request: RequestInfo) -> bool:
        if self.verb is not None and self.verb.lower() != request.verb:
            return False
        if self.resource is not None and not _resource_matches(self.resource, request):
            return False
        if self.namespace is not None and self.namespace != request.namespace:
            return False
        return self.name is None or self.name == request.name

    @property
    def exhausted(self) -> bool:
        return self.count is not None and self.hits >= self.count


def _resource_matches(wanted: str, request: RequestInfo) -> bool:
    wanted = wanted.lower()
    base, _, sub = wanted.partition("/")
    if sub and sub != request.subresource:
        return False
    names = {request.resource, request.kind.lower(), f"{request.resource}.{request.group}"}
    return base in names


class Droppable(Protocol):
    dropped: bool

    def drop(self) -> None: ...


@dataclass(frozen=True)
class Decision:
    """What to do to one request: wait `delay` and until every rule in `holds` is removed,
    then fail with `status` if set."""

    delay: float = 0.0
    status: int | None = None
    message: str = ""
    holds: tuple[asyncio.Event, ...] = ()

    async def wait(self) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)  # injected latency, not synchronisation
        for removed in self.holds:
            await removed.wait()


class Faults:
    """The live fault configuration of one server (also served under /_sim/faults)."""

    def __init__(self, seed: int | None = None) -> None:
        self._rules: dict[int, FaultRule] = {}
        self._removed: dict[int, asyncio.Event] = {}
        """Per holding rule: set when it is removed, which lets its held requests go on."""
        self._ids = itertools.count(1)
        self._random = random.Random(seed)
        self._running = asyncio.Event()
        self._running.set()
        self._watches: dict[Droppable, RequestInfo] = {}
        self._held = 0

    def add(self, rule: FaultRule | None = None, **fields: Any) -> FaultRule:
        """Install a rule (given, or built from keyword fields); returns it with its id."""
        rule = rule if rule is not None else FaultRule(**fields)
        rule.id = next(self._ids)
        self._rules[rule.id] = rule
        if rule.hold:
            self._removed[rule.id] = asyncio.Event()
        return rule

    def remove(self, rule_id: int) -> bool:
        removed = self._removed.pop(rule_id, None)
        if removed is not None:
            removed.set()
        return self._rules.pop(rule_id, None) is not None

    def clear(self) -> None:
        """Remove every rule (held requests go on) and resume a paused server."""
        for rule_id in list(self._rules):
            self.remove(rule_id)
        self.resume()

    @property
    def rules(self) -> list[FaultRule]:
        return list(self._rules.values())

    def decide(self, request: RequestInfo) -> Decision:
        """Consume the matching rules for one request."""
        delay, status, message, holds = 0.0, None, "", []
        for rule in list(self._rules.values()):
            if rule.exhausted or not rule.selects(request):
                continue
            if rule.probability < 1.0 and self._random.random() >= rule.probability:
                continue
            rule.hits += 1
            delay += rule.delay
            if status is None and rule.status is not None:
                status, message = rule.status, rule.message
            if rule.id in self._removed:
                holds.append(self._removed[rule.id])
        return Decision(delay, status, message, tuple(holds))

    # ---- pause ---------------------------------------------------------------------------

    def pause(self) -> None:
        """Hold every API request (and watch delivery) until `resume`."""
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    @property
    def paused(self) -> bool:
        return not self._running.is_set()

    @property
    def held(self) -> int:
        """Requests currently waiting for `resume`."""
        return self._held

    async def wait_running(self) -> None:
        if self._running.is_set():
            return
        self._held += 1
        try:
            await self._running.wait()
        finally:
            self._held -= 1

    # ---- watches -------------------------------------------------------------------------

    def track_watch(self, watch: Droppable, request: RequestInfo) -> None:
        self._watches[watch] = request

    def untrack_watch(self, watch: Droppable) -> None:
        self._watches.pop(watch, None)

    @property
    def watch_count(self) -> int:
        return len(self._watches)

    def drop_watches(self, resource: str | None = None, namespace: str | None = None) -> int:
        """Cut open watch connections (all, or of one resource/namespace); returns how many."""
        selector = FaultRule(resource=resource, namespace=namespace)
        victims = [w for w, request in self._watches.items() if selector.selects(request)]
        for watch in victims:
            watch.drop()
            self.untrack_watch(watch)
        return len(victims)

    def describe(self) -> JSON:
        return {
            "paused": self.paused,
            "held": self.held,
            "watches": self.watch_count,
            "rules": [asdict(rule) for rule in self.rules],
        }
