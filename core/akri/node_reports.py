"""Pure: per-node report rows and the conditions computed from them.

A node changes only its own row, and only the problem types it is the source of (discovery,
device plugins and API writes are reported by different parts of one agent); the controller
withdraws the rows of nodes that are gone. After either, the conditions are computed again
from the rows alone: a problem type is True while any node reports it (the message names each
such node), and Ready (on a Configuration) is True only when every reporting node is free of
problems. So the stored conditions never depend on which node wrote last, and a stray or
departed node stops counting as soon as its row is withdrawn.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime

from akri.api.reports import NodeProblem, NodeReport
from akri.api.wire import Condition, ConditionStatus, set_condition

READY = "Ready"
READY_REASON = "Discovering"
NO_NODES_REASON = "NoNodes"
RESOLVED_REASON = "Resolved"
MAX_MESSAGE = 32768
MAX_PROBLEM = 4096


def node_prefix(node: str) -> str:
    return f"node {node}: "


def with_problems(
    reports: Sequence[NodeReport],
    node: str,
    types: Collection[str],
    problems: Mapping[str, str],
    *,
    keep_empty: bool,
) -> list[NodeReport]:
    """`reports` with `node`'s problems of `types` replaced by `problems` (type to message).

    Problems of other types in the node's row stay: another part of the agent reports them. A
    row left without problems stays only when `keep_empty` (a Configuration lists every node
    that runs it; an Instance only the nodes with a problem). Rows are sorted by node.
    """
    old = next((r for r in reports if r.node == node), None)
    kept = [p for p in (old.problems if old else []) if p.type not in types]
    added = [NodeProblem(type=t, message=m[:MAX_PROBLEM]) for t, m in problems.items()]
    row = NodeReport(node=node, problems=sorted(kept + added, key=lambda p: p.type))
    others = [r for r in reports if r.node != node]
    rows = [*others, row] if row.problems or keep_empty else others
    return sorted(rows, key=lambda r: r.node)


def withdrawn(reports: Sequence[NodeReport], live: Callable[[str], bool]) -> list[NodeReport]:
    """The rows of the nodes that are still `live`."""
    return [r for r in reports if live(r.node)]


def aggregated(
    conditions: Sequence[Condition],
    reports: Sequence[NodeReport],
    types: Sequence[str],
    *,
    ready: bool,
    generation: int | None,
    now: datetime,
) -> list[Condition]:
    """`conditions` computed again from `reports` for `types` (and Ready when `ready`).

    A type no node reports any more is set False (Resolved) when it was set; one never reported
    stays absent. Ready False takes as reason the first of `types` any node reports. Conditions
    of other types are kept as they are.
    """

    def condition(type: str, status: ConditionStatus, reason: str, message: str) -> Condition:
        return Condition(
            type=type,
            status=status,
            reason=reason,
            message=message[:MAX_MESSAGE],
            last_transition_time=now,
            observed_generation=generation,
        )

    result = list(conditions)
    reported = [t for t in types if any(_messages(reports, t))]
    for type in types:
        if messages := _messages(reports, type):
            result = set_condition(result, condition(type, "True", type, "; ".join(messages)))
        elif (old := next((c for c in result if c.type == type), None)) and old.status != "False":
            message = "no node reports it any more"
            result = set_condition(result, condition(type, "False", RESOLVED_REASON, message))
    if ready:
        if not reports:
            message = "no node reports on it (yet)"
            result = set_condition(result, condition(READY, "Unknown", NO_NODES_REASON, message))
        elif reported:
            problems = [m for t in reported for m in _messages(reports, t)]
            message = "; ".join(problems)
            result = set_condition(result, condition(READY, "False", reported[0], message))
        else:
            nodes = ", ".join(r.node for r in reports)
            message = f"discovering on {len(reports)} node(s): {nodes}"
            result = set_condition(result, condition(READY, "True", READY_REASON, message))
    return result


def _messages(reports: Sequence[NodeReport], type: str) -> list[str]:
    return [node_prefix(r.node) + p.message for r in reports for p in r.problems if p.type == type]
