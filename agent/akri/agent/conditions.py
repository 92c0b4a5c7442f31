"""Pure: this node's row in a Configuration's (or Instance's) status, and the conditions
computed from all rows.

Every agent reports on the same Configuration and agents may honestly disagree (a handler
registered on one node only), so each node writes only its own row of `status.nodes`, and only
the problem types the reporting part of the agent is the source of; the conditions are then
computed from all rows (`akri.node_reports`): Ready=True when every node that runs the
Configuration discovers, otherwise Ready=False with the first problem's type as reason, plus
each problem's condition (HandlerUnavailable, InvalidDetails, InvalidProperties, InvalidName,
InvalidConfiguration, RefusedHostPath, PluginUnavailable, WriteRefused) set True, naming the
nodes that have it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import datetime
from typing import TypeVar

from akri.api import (
    INSTANCE_NODE_PROBLEMS,
    NODE_PROBLEMS,
    ConditionType,
    ConfigurationStatus,
    InstanceStatus,
)
from akri.discovery.model import Status
from akri.node_reports import aggregated, with_problems
from akri.refusal_codes import REFUSALS

DISCOVERY_PROBLEMS = (
    ConditionType.HANDLER_UNAVAILABLE,
    ConditionType.INVALID_DETAILS,
    ConditionType.INVALID_PROPERTIES,
    ConditionType.INVALID_NAME,
    ConditionType.INVALID_CONFIGURATION,
    ConditionType.REFUSED_HOST_PATH,
)
"""The types discovery (and reading the Configuration) decides, from one `Status`."""
RUNNER_PROBLEMS = tuple(
    t for t in DISCOVERY_PROBLEMS if t is not ConditionType.INVALID_CONFIGURATION
)
"""What a Configuration's runner reports; InvalidConfiguration is the watcher's (a runner runs
a valid spec, perhaps the last one, while the stored one is invalid)."""


S = TypeVar("S", ConfigurationStatus, InstanceStatus)


def write_refusal(status: int | None, message: str) -> str | None:
    """The WriteRefused problem an API answer to an Instance write is; None when it is not a
    refusal (a conflict, an overloaded or unreachable API: retried without a word)."""
    if status not in REFUSALS:
        return None
    return f"the API refuses this node's Instance writes: ({status}) {message}"


def explained(status: Status, handler: str, registered: Collection[str]) -> Status:
    """`status` with the handlers this node does have, when the wanted one is not registered."""
    if status.condition is not ConditionType.HANDLER_UNAVAILABLE or handler in registered:
        return status
    names = ", ".join(sorted(registered)) or "none"
    return Status(status.condition, f"{status.message}; registered here: {names}")


def discovery_problems(status: Status) -> dict[str, str]:
    """The problems a discovery status raises: none when discovery works."""
    return {} if status.ok else {status.condition.value: status.message}


def updated_status(
    status: S,
    node: str,
    types: Collection[str],
    problems: Mapping[str, str],
    generation: int | None,
    now: datetime,
) -> S | None:
    """`status` (of a Configuration or an Instance) after `node` reports `problems` of `types`;
    None when it says that already.

    On an Instance only nodes with a problem have a row (a healthy node costs the Instance,
    which every allocation rewrites, nothing) and there is no Ready.
    """
    configuration = isinstance(status, ConfigurationStatus)
    rows = with_problems(status.nodes, node, types, problems, keep_empty=configuration)
    conditions = aggregated(
        status.conditions,
        rows,
        NODE_PROBLEMS if configuration else INSTANCE_NODE_PROBLEMS,
        ready=configuration,
        generation=generation,
        now=now,
    )
    if rows == status.nodes and conditions == status.conditions:
        return None
    return status.model_copy(update={"nodes": rows, "conditions": conditions})
