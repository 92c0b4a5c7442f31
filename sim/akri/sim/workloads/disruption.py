"""What kube-controller-manager's disruption controller writes to a PodDisruptionBudget's status.

Pure: `budget_status` takes the budget, the pods of its namespace and the time, and returns the
status the simulated controller writes. Where it is simpler than upstream: the "expected" count
of a percentage `minAvailable` or of `maxUnavailable` is the matching pods that are neither
terminating nor finished, not the sum of their controllers' `replicas` (the two differ only while
a controller is short of or above its scale), and pods without a scalable controller are counted
instead of failing the sync with `SyncFailed`. Evictions are not tracked, so `disruptedPods` is
never written.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from akri.sim.apiserver.apps_kinds import selector_labels
from akri.sim.workloads import plan

Object = Mapping[str, Any]
JSON = dict[str, Any]

CONDITION: Final = "DisruptionAllowed"
SUFFICIENT: Final = "SufficientPods"
INSUFFICIENT: Final = "InsufficientPods"


def selected_pods(budget: Object, pods: Iterable[Object]) -> list[Object]:
    """The budget's pods: a missing selector selects none, an empty one all in its namespace."""
    spec = budget.get("spec") or {}
    if spec.get("selector") is None:
        return []
    namespace = budget["metadata"].get("namespace")
    selector = selector_labels(spec["selector"])
    return [
        pod
        for pod in pods
        if pod["metadata"].get("namespace") == namespace
        and selector.matches(pod["metadata"].get("labels") or {})
    ]


def expected_and_desired(spec: Object, pods: Sequence[Object]) -> tuple[int, int]:
    """(expectedPods, desiredHealthy) as upstream's getExpectedPodCount decides them."""
    scale = sum(1 for pod in pods if plan.is_active(pod))
    if spec.get("maxUnavailable") is not None:
        unavailable = plan.scaled(spec["maxUnavailable"], scale, round_up=True)
        return scale, max(0, scale - unavailable)
    minimum = spec.get("minAvailable")
    if minimum is None:
        return 0, 0
    if isinstance(minimum, str) and minimum.endswith("%"):
        return scale, plan.scaled(minimum, scale, round_up=True)
    return len(pods), int(minimum)


def budget_status(budget: Object, pods: Iterable[Object], now: str) -> JSON:
    """The whole status; the condition keeps its lastTransitionTime while its status holds."""
    mine = selected_pods(budget, pods)
    expected, desired = expected_and_desired(budget.get("spec") or {}, mine)
    healthy = sum(1 for pod in mine if plan.is_ready(pod))
    allowed = max(0, healthy - desired) if expected > 0 else 0
    generation = int(budget["metadata"].get("generation") or 0)
    status = "True" if allowed > 0 else "False"
    previous: Object = next(
        (
            c
            for c in (budget.get("status") or {}).get("conditions") or []
            if c.get("type") == CONDITION
        ),
        {},
    )
    condition = {
        "type": CONDITION,
        "status": status,
        "reason": SUFFICIENT if allowed > 0 else INSUFFICIENT,
        "message": "",
        "observedGeneration": generation,
        "lastTransitionTime": (
            previous.get("lastTransitionTime", now) if previous.get("status") == status else now
        ),
    }
    return {
        "observedGeneration": generation,
        "expectedPods": expected,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "disruptionsAllowed": allowed,
        "conditions": [condition],
    }
