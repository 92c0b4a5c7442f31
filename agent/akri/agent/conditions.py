"""Pure: the Configuration conditions one agent asserts from its own view of discovery.

Every agent writes the same Configuration's status, and agents may honestly disagree (a
handler registered on one node only). So an agent never argues with what it reads back: it
writes only when its own view changes (the caller keeps the last view it wrote), names its node
in node-dependent messages, sets only the conditions its view decides, and clears a problem
condition only when the problem is set. The stored status is the latest change any node saw;
no two agents can keep rewriting each other's conditions.

A healthy Configuration shows just Ready=True; a problem shows Ready=False with the problem's
type as reason, plus that problem's condition (HandlerUnavailable, InvalidDetails,
InvalidProperties, InvalidName, InvalidConfiguration) set to True with the explanation.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from akri.agent.discovery.model import Status
from akri.api import Condition, ConditionType, set_condition

PROBLEMS = (
    ConditionType.HANDLER_UNAVAILABLE,
    ConditionType.INVALID_DETAILS,
    ConditionType.INVALID_PROPERTIES,
    ConditionType.INVALID_NAME,
    ConditionType.INVALID_CONFIGURATION,
)
READY_REASON = "Discovering"
RESOLVED_REASON = "Resolved"
MAX_MESSAGE = 32768


def explained(status: Status, handler: str, registered: Collection[str]) -> Status:
    """`status` with the handlers this node does have, when the wanted one is not registered."""
    if status.condition is not ConditionType.HANDLER_UNAVAILABLE or handler in registered:
        return status
    names = ", ".join(sorted(registered)) or "none"
    return Status(status.condition, f"{status.message}; registered here: {names}")


def node_view(node: str, status: Status) -> Status:
    """`status` as this node reports it: the message says which node saw it."""
    return Status(status.condition, f"node {node}: {status.message}"[:MAX_MESSAGE])


def updated_conditions(
    conditions: Sequence[Condition], view: Status, generation: int | None, now: datetime
) -> list[Condition] | None:
    """`conditions` after asserting `view`; None when they already say exactly that."""

    def condition(type: str, status: bool, reason: str, message: str) -> Condition:
        return Condition(
            type=type,
            status="True" if status else "False",
            reason=reason,
            message=message,
            last_transition_time=now,
            observed_generation=generation,
        )

    reason = READY_REASON if view.ok else view.condition.value
    result = set_condition(
        conditions, condition(ConditionType.READY, view.ok, reason, view.message)
    )
    for problem in PROBLEMS:
        if problem is view.condition:
            result = set_condition(result, condition(problem, True, problem.value, view.message))
        elif (
            old := next((c for c in result if c.type == problem), None)
        ) and old.status != "False":
            result = set_condition(result, condition(problem, False, RESOLVED_REASON, view.message))
    return None if result == list(conditions) else result
