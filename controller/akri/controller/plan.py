"""What to do about one Instance's brokers: the difference between desired and actual objects.

Pure: given the brokers that should exist (from `builders`) and those that do (from the cache),
decide which to create and which to delete, and why. Backoff is not decided here: the caller
gates creations through `Retries`, so a broker that keeps failing is not recreated in a loop.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from akri import naming
from akri.controller.builders import POD_RUNNING, Object, built_hash

POD_PENDING = "Pending"
POD_ENDED = frozenset({"Failed", "Succeeded"})


class Reason(StrEnum):
    """Why a broker is deleted; also the reason of the Event that says so."""

    NOT_WANTED = "BrokerNotWanted"
    OUTDATED = "BrokerOutdated"
    ENDED = "BrokerEnded"
    PENDING_TOO_LONG = "BrokerPendingTooLong"


@dataclass(frozen=True)
class Deletion:
    obj: Object
    reason: Reason
    detail: str

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    @property
    def failed(self) -> bool:
        """The broker itself did not work out: its replacement waits for the backoff."""
        return self.reason in (Reason.ENDED, Reason.PENDING_TOO_LONG)


@dataclass(frozen=True)
class Plan:
    create: list[Object] = field(default_factory=list)
    delete: list[Deletion] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    """Current brokers that run: their failure history can be forgotten."""
    recheck_after: float | None = None
    """Seconds until a Pending broker overstays its grace; None when none is waiting."""


def _created(obj: Object) -> datetime | None:
    stamp = obj["metadata"].get("creationTimestamp")
    try:
        return datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def _not_wanted_detail(obj: Object, desired: Mapping[str, Object], nodes: Collection[str]) -> str:
    """Why: the broker's node left the Instance (its device is offline there; also when it
    was the last node), else the Configuration's broker spec changed kind or is gone."""
    node = (obj["metadata"].get("labels") or {}).get(naming.LABEL_TARGET_NODE)
    if node is not None and node not in nodes:
        return f"node {node} is no longer in the Instance's nodes"
    if not desired:
        return "the Configuration deploys no such broker"
    return "superseded by a newer broker"


def plan_brokers(
    desired: Mapping[str, Object],
    actual: Iterable[Object],
    now: datetime,
    pending_grace_s: float,
    nodes: Collection[str] = (),
) -> Plan:
    """Compare brokers by name: delete what is unwanted, outdated, ended or stuck Pending;
    create what is missing. A name whose old object is still being deleted is not created
    yet (the API would refuse the name); the deletion's watch event brings the next pass."""
    plan = Plan()
    present: set[str] = set()
    recheck: list[float] = []
    for obj in actual:
        metadata = obj["metadata"]
        name = str(metadata["name"])
        present.add(name)
        if metadata.get("deletionTimestamp"):
            continue
        want = desired.get(name)
        status = obj.get("status") or {}
        phase = status.get("phase")
        if want is None:
            detail = _not_wanted_detail(obj, desired, nodes)
            plan.delete.append(Deletion(obj, Reason.NOT_WANTED, detail))
        elif built_hash(obj) != built_hash(want):
            detail = "the broker spec or the Instance's brokerProperties changed"
            plan.delete.append(Deletion(obj, Reason.OUTDATED, detail))
        elif phase in POD_ENDED:
            why = status.get("reason") or phase
            detail = f"phase {phase} ({why}): {status.get('message') or 'no message'}"
            plan.delete.append(Deletion(obj, Reason.ENDED, detail))
        elif phase == POD_PENDING and (created := _created(obj)) is not None:
            left = pending_grace_s - (now - created).total_seconds()
            if left <= 0:
                detail = f"Pending for more than {pending_grace_s:g}s"
                plan.delete.append(Deletion(obj, Reason.PENDING_TOO_LONG, detail))
            else:
                recheck.append(left)
        elif phase == POD_RUNNING:
            plan.running.append(name)
    plan.create.extend(body for name, body in desired.items() if name not in present)
    return Plan(plan.create, plan.delete, plan.running, min(recheck, default=None))
