"""The parts of a Configuration's status the controller owns: instanceCount, InvalidBrokerSpec,
and withdrawing the rows of nodes that are gone.

Agents write their own rows of `nodes` and the conditions computed from them; each writer
changes only its own fields (guarded, on the status subresource), so neither undoes the other.
A node that is lost or deleted (or never existed: a stray agent) reports nothing any more, so
its row is withdrawn and the conditions computed again from the rows left. Pure: returns the
new status, or None when the stored one already says the same, so a steady state writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from akri.api import NODE_PROBLEMS, Condition, ConditionType, ConfigurationStatus, set_condition
from akri.node_reports import aggregated, withdrawn

REJECTED = "Rejected"
ACCEPTED = "Accepted"
MAX_MESSAGE = 32768


@dataclass(frozen=True)
class BrokerOutcome:
    """The latest attempt to create a broker of a Configuration: None, or why it was refused."""

    generation: int | None
    problem: str | None


def updated_status(
    stored: Mapping[str, Any] | None,
    *,
    instance_count: int,
    outcome: BrokerOutcome | None,
    live: Callable[[str], bool],
    generation: int | None,
    now: datetime,
) -> dict[str, Any] | None:
    """`stored` with the controller's fields brought up to date; None when nothing changes.

    Without an outcome (no broker attempted since this controller started) the condition is
    left as it is; a problem sets it True; success clears a condition that is set. Rows of
    nodes that are not `live` are withdrawn.
    """
    status = ConfigurationStatus.model_validate(dict(stored or {}))
    conditions = list(status.conditions)
    rows = withdrawn(status.nodes, live)
    if rows != status.nodes:
        conditions = aggregated(
            conditions, rows, NODE_PROBLEMS, ready=True, generation=generation, now=now
        )
    current = status.condition(ConditionType.INVALID_BROKER_SPEC)
    if outcome is not None and (outcome.problem is not None or current is not None):
        bad = outcome.problem is not None
        new = Condition(
            type=ConditionType.INVALID_BROKER_SPEC,
            status="True" if bad else "False",
            reason=REJECTED if bad else ACCEPTED,
            message=(outcome.problem or "brokers are created")[:MAX_MESSAGE],
            last_transition_time=now,
            observed_generation=outcome.generation,
        )
        if not _same(current, new):
            conditions = set_condition(conditions, new)
    if (conditions, rows, instance_count) == (
        status.conditions,
        status.nodes,
        status.instance_count,
    ):
        return None
    wire = ConfigurationStatus(
        conditions=conditions, nodes=rows, instance_count=instance_count
    ).model_dump(mode="json", by_alias=True, exclude_none=True)
    kept = {**(stored or {}), "instanceCount": instance_count, "conditions": wire["conditions"]}
    return {**kept, "nodes": wire["nodes"]} if rows or "nodes" in kept else kept


def _same(current: Condition | None, new: Condition) -> bool:
    return current is not None and (current.status, current.reason, current.message) == (
        new.status,
        new.reason,
        new.message,
    )
