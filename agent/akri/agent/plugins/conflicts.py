"""Pure: the SlotConflict condition one node asserts on an Instance (docs/design.md §5.5).

Only the node whose container uses a slot can see a conflict, and several nodes may see
conflicts on one Instance at once. A node reports when it sees one and the condition is not
already True (the first report stands, so nodes never overwrite each other in turn), and
clears the condition only when the True one is its own report and it sees none any more.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from akri.api import Condition, InstanceConditionType, set_condition
from akri.api.wire import ConditionStatus
from akri.node_reports import MAX_MESSAGE, RESOLVED_REASON, node_prefix
from akri.slot_sync import Conflict

TYPE = InstanceConditionType.SLOT_CONFLICT
REPORTED = "SlotInUseElsewhere"


def conflict_conditions(
    conditions: Sequence[Condition],
    node: str,
    conflicts: Sequence[Conflict],
    generation: int | None,
    now: datetime,
) -> list[Condition] | None:
    """`conditions` after this node's report of `conflicts`; None when nothing changes."""
    old = next((c for c in conditions if c.type == TYPE), None)
    reported = old is not None and old.status == "True"
    mine = reported and old is not None and old.message.startswith(node_prefix(node))
    status: ConditionStatus
    if conflicts:
        if reported and not mine:
            return None
        status, reason = "True", REPORTED
        message = node_prefix(node) + "; ".join(map(str, conflicts))
    elif mine:
        status, reason, message = (
            "False",
            RESOLVED_REASON,
            node_prefix(node) + "no conflict any more",
        )
    else:
        return None
    new = Condition(
        type=TYPE,
        status=status,
        reason=reason,
        message=message[:MAX_MESSAGE],
        last_transition_time=now,
        observed_generation=generation,
    )
    result = set_condition(conditions, new)
    return None if result == list(conditions) else result
