"""Where a Pod fits, by the rules of the Kubernetes scheduler the simulator needs.

Pure functions over plain Pod and Node dicts. Only extended resources (names with a domain,
such as `akri.sh/cfg`) are counted: simulated nodes have CPU and memory to spare, and the
device resources are what this project is about.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from akri.sim import quantity
from akri.sim.resource_names import is_extended_resource_name

Object = Mapping[str, Any]
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def container_requests(container: Object) -> Counter[str]:
    resources = container.get("resources") or {}
    # For extended resources requests must equal limits; a limit alone implies the request.
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return Counter(
        {
            name: quantity.count(value)
            for name, value in merged.items()
            if is_extended_resource_name(name)
        }
    )


def pod_requests(pod: Object) -> Counter[str]:
    """Effective extended-resource request: the larger of any init container and all apps."""
    spec = pod.get("spec") or {}
    apps: Counter[str] = Counter()
    for container in spec.get("containers") or []:
        apps.update(container_requests(container))
    effective = Counter(apps)
    for init in spec.get("initContainers") or []:
        for name, count in container_requests(init).items():
            effective[name] = max(effective[name], count)
    return effective


def is_ready(node: Object) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _matches(requirement: Object, value: str | None) -> bool:
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and value.lstrip("-").isdigit():
        bound = int(values[0]) if values and str(values[0]).lstrip("-").isdigit() else None
        return bound is not None and (
            int(value) > bound if operator == "Gt" else int(value) < bound
        )
    return False


def _term_matches(term: Object, node: Object) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    fields = {"metadata.name": (node.get("metadata") or {}).get("name")}
    expressions = term.get("matchExpressions") or []
    field_expressions = term.get("matchFields") or []
    if not expressions and not field_expressions:
        return False  # an empty term matches nothing
    return all(_matches(e, labels.get(e.get("key"))) for e in expressions) and all(
        _matches(e, fields.get(e.get("key"))) for e in field_expressions
    )


def node_selector_matches(selector: Object, node: Object) -> bool:
    """A NodeSelector: its terms ORed."""
    return any(_term_matches(term, node) for term in selector.get("nodeSelectorTerms") or [])


def matches_node_selection(pod: Object, node: Object) -> bool:
    """nodeSelector and required node affinity (terms ORed, expressions within a term ANDed)."""
    spec = pod.get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(key) != value for key, value in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms")
    return not required or any(_term_matches(term, node) for term in required)


def _tolerates(toleration: Object, taint: Object) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("operator") == "Exists":
        return not toleration.get("key") or toleration.get("key") == taint.get("key")
    return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
        "value", ""
    )


def untolerated_taints(pod: Object, node: Object) -> list[Object]:
    """The node's NoSchedule and NoExecute taints none of the pod's tolerations tolerates."""
    tolerations = (pod.get("spec") or {}).get("tolerations") or []
    return [
        taint
        for taint in (node.get("spec") or {}).get("taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute")
        and not any(_tolerates(toleration, taint) for toleration in tolerations)
    ]


def allocatable(node: Object) -> Counter[str]:
    status = node.get("status") or {}
    return Counter(
        {
            k: quantity.count(v)
            for k, v in (status.get("allocatable") or {}).items()
            if is_extended_resource_name(k)
        }
    )


def requested_on_nodes(pods: Iterable[Object]) -> dict[str, Counter[str]]:
    """Extended resources already claimed on each node by its non-terminated pods."""
    used: dict[str, Counter[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            used.setdefault(node, Counter()).update(pod_requests(pod))
    return used


class NodeCheck(Protocol):
    def resources(self, node: Object) -> set[str]: ...
    def problem(self, pod: Object, node: Object) -> str | None: ...


@dataclass(frozen=True)
class Decision:
    node: str | None
    message: str  # why no node fits, in the scheduler's words; empty when one does


def choose_node(
    pod: Object,
    nodes: Iterable[Object],
    used: Mapping[str, Counter[str]],
    dra: NodeCheck | None = None,
) -> Decision:
    """The fitting node with the most spare requested resources (ties: by name), or why none.

    `dra` (the DynamicResources filter) names the extended resources DRA serves on a node,
    which device-plugin capacity does not count, and says why the Pod's claims do not fit."""
    requested = pod_requests(pod)
    reasons: Counter[str] = Counter()
    fitting: list[tuple[int, str]] = []
    candidates = sorted(nodes, key=lambda n: str(n["metadata"]["name"]))
    for node in candidates:
        name = node["metadata"]["name"]
        if not is_ready(node):
            reasons["node(s) were not ready"] += 1
            continue
        if not matches_node_selection(pod, node):
            reasons["node(s) didn't match Pod's node affinity/selector"] += 1
            continue
        taints = untolerated_taints(pod, node)
        if taints:
            key, value = taints[0].get("key"), taints[0].get("value", "")
            reasons[f"node(s) had untolerated taint {{{key}: {value}}}"] += 1
            continue
        served = dra.resources(node) if dra is not None else set()
        wanted = Counter({r: c for r, c in requested.items() if r not in served})
        free = allocatable(node)
        free.subtract(used.get(name, Counter()))
        short = sorted(r for r, count in wanted.items() if free[r] < count)
        if short:
            reasons[f"Insufficient {short[0]}"] += 1
            continue
        problem = dra.problem(pod, node) if dra is not None else None
        if problem is not None:
            reasons[problem] += 1
            continue
        fitting.append((-sum(free[r] - count for r, count in wanted.items()), name))
    if fitting:
        return Decision(min(fitting)[1], "")
    details = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
    total = len(candidates)
    return Decision(None, f"0/{total} nodes are available" + (f": {details}." if details else "."))
