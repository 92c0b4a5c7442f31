"""Who may lead: decisions over a coordination.k8s.io/v1 Lease, as client-go's elector makes them.

Pure, with an injected clock. A candidate never compares the lease's renewTime with its own
clock (replicas' clocks differ): it notes when it *observed* the record change and treats the
lease as expired once the record has stayed the same for leaseDurationSeconds of its own time.
A leader that cannot renew steps down after a renew deadline shorter than the lease duration,
so it has stopped acting before any other replica can consider the lease expired.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class Decision(StrEnum):
    RENEW = "renew"
    ACQUIRE = "acquire"
    WAIT = "wait"


@dataclass(frozen=True)
class LeaseRecord:
    holder: str
    duration_s: int
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0


def record_of(spec: Mapping[str, Any] | None) -> LeaseRecord:
    spec = spec or {}
    return LeaseRecord(
        holder=spec.get("holderIdentity") or "",
        duration_s=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=spec.get("acquireTime"),
        renew_time=spec.get("renewTime"),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def micro_time(moment: datetime) -> str:
    """The MicroTime format of Lease times."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaseObserver:
    """The last record one candidate read, and when (by its own clock) it last changed."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._record: LeaseRecord | None = None
        self._since = 0.0

    def see(self, record: LeaseRecord) -> None:
        if record != self._record:
            self._record, self._since = record, self._clock()

    def decide(self, identity: str) -> Decision:
        record = self._record
        if record is None or not record.holder:
            return Decision.ACQUIRE
        if record.holder == identity:
            return Decision.RENEW
        if self._clock() - self._since >= record.duration_s:
            return Decision.ACQUIRE
        return Decision.WAIT


def claimed(
    record: LeaseRecord | None, identity: str, now: datetime, duration_s: int
) -> dict[str, Any]:
    """The Lease spec that makes (or keeps) `identity` the holder."""
    renewing = record is not None and record.holder == identity
    transitions = 0 if record is None else record.transitions
    if record is not None and record.holder and not renewing:
        transitions += 1
    stamp = micro_time(now)
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": duration_s,
        "acquireTime": record.acquire_time if renewing and record else stamp,
        "renewTime": stamp,
        "leaseTransitions": transitions,
    }


def released(record: LeaseRecord, now: datetime) -> dict[str, Any]:
    """The spec a stepping-down leader writes so a successor need not wait for expiry."""
    return {
        "holderIdentity": "",
        "leaseDurationSeconds": 1,
        "acquireTime": record.acquire_time,
        "renewTime": micro_time(now),
        "leaseTransitions": record.transitions,
    }
