"""The parts of a Configuration's status the controller owns: instanceCount, InvalidBrokerSpec,
ControllerWriteRefused, and withdrawing the rows of nodes that are gone.

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
REFUSED = "Refused"
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
    refused: str | None = None,
) -> dict[str, Any] | None:
    """`stored` with the controller's fields brought up to date; None when nothing changes.

    Without an outcome (no broker attempted since this controller started) InvalidBrokerSpec
    is left as it is; a problem sets it True; success clears a condition that is set.
    ControllerWriteRefused is True while the API `refused` one of the controller's writes for
    this Configuration, and cleared when none is refused any more. Rows of nodes that are not
    `live` are withdrawn.
    """
    status = ConfigurationStatus.model_validate(dict(stored or {}))
    conditions = list(status.conditions)
    rows = withdrawn(status.nodes, live)
    if rows != status.nodes:
        conditions = aggregated(
            conditions, rows, NODE_PROBLEMS, ready=True, generation=generation, now=now
        )
    if outcome is not None:
        conditions = _problem_condition(
            conditions,
            ConditionType.INVALID_BROKER_SPEC,
            outcome.problem,
            (REJECTED, ACCEPTED, "brokers are created"),
            outcome.generation,
            now,
        )
    conditions = _problem_condition(
        conditions,
        ConditionType.CONTROLLER_WRITE_REFUSED,
        refused,
        (REFUSED, ACCEPTED, "the API accepts the controller's writes"),
        generation,
        now,
    )
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


def _problem_condition(
    conditions: list[Condition],
    kind: ConditionType,
    problem: str | None,
    wording: tuple[str, str, str],
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    """`conditions` with `kind` True while there is a `problem`, False once it is gone (a
    condition never set stays absent); `wording` is the reasons when bad and good, and the
    message when good."""
    current = next((c for c in conditions if c.type == kind), None)
    if problem is None and current is None:
        return conditions
    bad_reason, good_reason, good_message = wording
    new = Condition(
        type=kind,
        status="True" if problem is not None else "False",
        reason=bad_reason if problem is not None else good_reason,
        message=(problem or good_message)[:MAX_MESSAGE],
        last_transition_time=now,
        observed_generation=generation,
    )
    return conditions if _same(current, new) else set_condition(conditions, new)


def _same(current: Condition | None, new: Condition) -> bool:
    return current is not None and (current.status, current.reason, current.message) == (
        new.status,
        new.reason,
        new.message,
    )
