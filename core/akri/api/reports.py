"""Per-node reports in a resource's status: what each node observed, kept apart per node.

Several agents report on one Configuration (and one Instance) and may honestly disagree. Each
node owns one row, keyed by its name, and rewrites only its own row; the conditions above the
rows are computed from all rows (`akri.node_reports`), so no node overwrites another's view
and a node that is gone can be withdrawn by removing its row.
"""

from __future__ import annotations

from pydantic import Field

from akri.api.wire import WireModel


class NodeProblem(WireModel):
    """One problem a node has, as the condition type it raises."""

    type: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$", max_length=316)
    """The condition type, e.g. HandlerUnavailable or PluginUnavailable."""
    message: str = Field(default="", max_length=4096)
    """What the node saw, without the node's name."""


class NodeReport(WireModel):
    """What one node reports: no problems means all is well there."""

    node: str = Field(min_length=1, max_length=253)
    """The reporting node's name."""
    problems: list[NodeProblem] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Current problems on this node, at most one per type."""
