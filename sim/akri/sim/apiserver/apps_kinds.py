"""`apps/v1` DaemonSet, Deployment and ReplicaSet: defaults, validation and printer columns.

The emulator stores them; `akri.sim.workloads` plays the controllers that turn them into Pods
(Deployment -> ReplicaSet -> Pods, as in Kubernetes) and writes the status fields
`kubectl rollout status` and `helm --wait` read.
"""

from __future__ import annotations

import json
from typing import Any

from akri.sim.apiserver.core_kinds import AGE, NAME, prepare_pod_spec
from akri.sim.apiserver.resources import Column, ResourceType
from akri.sim.apiserver.selectors import LabelSelector
from akri.sim.apiserver.validation import core

JSON = dict[str, Any]
Problems = list[tuple[str, str]]


def _status(path: str) -> Any:
    return lambda obj: (obj.get("status") or {}).get(path) or 0


def _ready_of(ready: str, wanted: Any) -> Any:
    return lambda obj: f"{(obj.get('status') or {}).get(ready) or 0}/{wanted(obj)}"


def _replicas(obj: JSON) -> int:
    return int((obj.get("spec") or {}).get("replicas", 1))


def _node_selector(obj: JSON) -> str:
    selector = ((obj.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeSelector")
    return ",".join(f"{k}={v}" for k, v in (selector or {}).items()) or "<none>"


def _prepare_template(obj: JSON) -> None:
    template = obj.setdefault("spec", {}).setdefault("template", {})
    prepare_pod_spec(template.setdefault("spec", {}))


def _rolling(strategy: JSON, surge: str | int) -> None:
    """Defaults of a RollingUpdate strategy; `type` defaults to RollingUpdate."""
    strategy.setdefault("type", "RollingUpdate")
    if strategy["type"] == "RollingUpdate":
        rolling = strategy.setdefault("rollingUpdate", {})
        rolling.setdefault("maxUnavailable", 1 if surge == 0 else "25%")
        rolling.setdefault("maxSurge", surge)


def _prepare_daemonset(daemonset: JSON) -> None:
    spec = daemonset.setdefault("spec", {})
    _rolling(spec.setdefault("updateStrategy", {}), 0)
    spec.setdefault("revisionHistoryLimit", 10)
    _prepare_template(daemonset)


def _prepare_deployment(deployment: JSON) -> None:
    spec = deployment.setdefault("spec", {})
    spec.setdefault("replicas", 1)
    _rolling(spec.setdefault("strategy", {}), "25%")
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    _prepare_template(deployment)


def _prepare_replicaset(replicaset: JSON) -> None:
    replicaset.setdefault("spec", {}).setdefault("replicas", 1)
    _prepare_template(replicaset)


def selector_labels(selector: JSON | None) -> LabelSelector:
    """A `metav1.LabelSelector` (matchLabels and matchExpressions) as a parsed selector."""
    terms = [f"{k}={v}" for k, v in ((selector or {}).get("matchLabels") or {}).items()]
    for expression in (selector or {}).get("matchExpressions") or []:
        key, operator = expression.get("key", ""), expression.get("operator", "")
        values = ",".join(expression.get("values") or [])
        terms.append(
            {"In": f"{key} in ({values})", "NotIn": f"{key} notin ({values})", "Exists": key}.get(
                operator, f"!{key}"
            )
        )
    return LabelSelector.parse(",".join(terms))


def _go_map(labels: dict[str, str]) -> str:
    """A label map as Go's %#v prints it in validation messages."""
    return (
        "{" + ",".join(f"{json.dumps(k)}:{json.dumps(v)}" for k, v in sorted(labels.items())) + "}"
    )


def _validate_workload(obj: JSON) -> Problems:
    """What apps/v1 validation refuses that a controller here would trip over."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if not selector or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return [("spec.selector", "Required value")]
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    problems: Problems = []
    if not selector_labels(selector).matches(labels):
        problems.append(
            (
                "spec.template.metadata.labels",
                f"Invalid value: map[string]string{_go_map(labels)}: "
                "`selector` does not match template `labels`",
            )
        )
    problems += core.pod_spec((spec.get("template") or {}).get("spec"), "spec.template.spec")
    replicas = spec.get("replicas", 0)
    if not isinstance(replicas, int) or replicas < 0:
        problems.append(
            ("spec.replicas", f"Invalid value: {replicas!r}: must be greater than or equal to 0")
        )
    return problems


def apps_kinds() -> list[ResourceType]:
    """Fresh definitions of the apps/v1 kinds."""
    return [
        ResourceType(
            "apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("all",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Desired", "integer", _status("desiredNumberScheduled")),
                Column("Current", "integer", _status("currentNumberScheduled")),
                Column("Ready", "integer", _status("numberReady")),
                Column("Up-to-date", "integer", _status("updatedNumberScheduled")),
                Column("Available", "integer", _status("numberAvailable")),
                Column("Node Selector", "string", _node_selector),
                AGE,
            ),
            status_on_create={},
            prepare_create=_prepare_daemonset,
            validate=_validate_workload,
            tracks_generation=True,
        ),
        ResourceType(
            "apps", "v1", "Deployment", "deployments", "deployment", True, ("deploy",), ("all",),
            subresources=frozenset({"status", "scale"}),
            columns=(
                NAME,
                Column("Ready", "string", _ready_of("readyReplicas", _replicas)),
                Column("Up-to-date", "integer", _status("updatedReplicas")),
                Column("Available", "integer", _status("availableReplicas")),
                AGE,
            ),
            status_on_create={},
            prepare_create=_prepare_deployment,
            validate=_validate_workload,
            tracks_generation=True,
        ),
        ResourceType(
            "apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), ("all",),
            subresources=frozenset({"status", "scale"}),
            columns=(
                NAME,
                Column("Desired", "integer", _replicas),
                Column("Current", "integer", _status("replicas")),
                Column("Ready", "integer", _status("readyReplicas")),
                AGE,
            ),
            status_on_create={},
            prepare_create=_prepare_replicaset,
            validate=_validate_workload,
            tracks_generation=True,
        ),
    ]  # fmt: skip
