"""When a node counts as lost: deleted, or not Ready for longer than a grace period.

A lost node's agent can no longer release what it holds, so the controller takes the node out
of every Instance and frees its slots. The grace period runs on this controller's own clock from
when it first saw the node not Ready, not from the Node's lastTransitionTime: another machine's
clock could be skewed, and scrubbing a live node would hand its slots to a second holder.
Pure, with an injected clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

READY = "Ready"
_GONE = float("-inf")


def is_ready(node: Mapping[str, Any]) -> bool:
    """Ready condition True; False or Unknown (the node lifecycle controller's mark) is not."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == READY and c.get("status") == "True" for c in conditions)


class NodeWatch:
    """Tracks since when each node has been not Ready, and says which nodes are lost."""

    def __init__(self, grace_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._grace_s = grace_s
        self._clock = clock
        self._not_ready_since: dict[str, float] = {}

    def observe(self, name: str, node: Mapping[str, Any] | None) -> None:
        """The node's current object, or None when it does not exist (deleted)."""
        since = self._not_ready_since.get(name)
        if node is None:
            self._not_ready_since[name] = _GONE  # deleted: no grace
        elif is_ready(node):
            self._not_ready_since.pop(name, None)
        elif since is None or since == _GONE:  # newly not Ready, or created again
            self._not_ready_since[name] = self._clock()

    def lost_in(self, name: str) -> float | None:
        """Seconds until `name` is lost (0: lost now); None while it is Ready or unobserved."""
        since = self._not_ready_since.get(name)
        if since is None:
            return None
        return max(0.0, since + self._grace_s - self._clock())
