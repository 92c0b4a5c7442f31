"""Where a Pod fits, by the rules of the Kubernetes scheduler the simulator needs.

Pure functions over plain Pod and Node dicts. A node's room is its allocatable `pods`, `cpu`,
`memory` and extended resources (names with a domain, such as `akri.sh/cfg`), less what the
pods bound to it request (NodeResourcesFit); among the nodes that fit, a controller's replicas
are spread (the default topology spreading), then the most spare devices win.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from akri.sim import quantity
from akri.sim.resource_names import is_extended_resource_name

Object = Mapping[str, Any]
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


NODE_RESOURCES: Final = ("cpu", "memory")
"""The node's own resources a pod requests, besides one of its `pods`."""


def _amount(name: str, value: object) -> int:
    """cpu in millicores, memory in bytes (rounded up, as the scheduler reads them), else a
    count."""
    if name == "cpu":
        return math.ceil(quantity.parse(value) * 1000)
    if name == "memory":
        return math.ceil(quantity.parse(value))
    return quantity.count(value)


def _requested(container: Object, wanted: Callable[[str], bool]) -> Counter[str]:
    resources = container.get("resources") or {}
    # A limit alone implies the request (the API server defaults it so; for extended
    # resources the two must be equal).
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return Counter({name: _amount(name, value) for name, value in merged.items() if wanted(name)})


def container_requests(container: Object) -> Counter[str]:
    """The container's extended resources (its devices)."""
    return _requested(container, is_extended_resource_name)


def _takes_room(name: str) -> bool:
    return name in NODE_RESOURCES or is_extended_resource_name(name)


def pod_requests(pod: Object) -> Counter[str]:
    """What the pod takes from its node: one of its `pods`, and of cpu, memory and extended
    resources the larger of any init container and all apps, plus the pod's overhead."""
    spec = pod.get("spec") or {}
    apps: Counter[str] = Counter({"pods": 1})
    for container in spec.get("containers") or []:
        apps.update(_requested(container, _takes_room))
    effective = Counter(apps)
    for init in spec.get("initContainers") or []:
        for name, count in _requested(init, _takes_room).items():
            effective[name] = max(effective[name], count)
    effective.update(
        {
            name: _amount(name, value)
            for name, value in (spec.get("overhead") or {}).items()
            if name in NODE_RESOURCES
        }
    )
    return +effective


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


def _allocatable(node: Object, wanted: Callable[[str], bool]) -> Counter[str]:
    status = node.get("status") or {}
    return Counter(
        {k: _amount(k, v) for k, v in (status.get("allocatable") or {}).items() if wanted(k)}
    )


def allocatable(node: Object) -> Counter[str]:
    """The node's extended resources (its devices)."""
    return _allocatable(node, is_extended_resource_name)


def room(node: Object) -> Counter[str]:
    """All the node's allocatable resources that pods' requests take from."""
    return _allocatable(node, lambda name: name == "pods" or _takes_room(name))


def requested_on_nodes(pods: Iterable[Object]) -> dict[str, Counter[str]]:
    """Resources already taken on each node by its non-terminated pods."""
    used: dict[str, Counter[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            used.setdefault(node, Counter()).update(pod_requests(pod))
    return used


def controllers_on_nodes(pods: Iterable[Object]) -> dict[str, Counter[str]]:
    """Node -> controller uid -> its non-terminated pods there (what spreading counts)."""
    placed: dict[str, Counter[str]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        owner = controller_uid(pod)
        if node and owner and (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES:
            placed.setdefault(node, Counter())[owner] += 1
    return placed


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
    spread: Mapping[str, Counter[str]] | None = None,
) -> Decision:
    """Among the fitting nodes, the one with the fewest pods of the pod's controller (`spread`:
    node -> controller uid -> pods), then the most spare requested devices, then by name; or
    why none fits.

    `dra` (the DynamicResources filter) names the extended resources DRA serves on a node,
    which device-plugin capacity does not count, and says why the Pod's claims do not fit."""
    requested = pod_requests(pod)
    owner = controller_uid(pod)
    reasons: Counter[str] = Counter()
    victimless = 0  # nodes where only evicting pods could make room (none are evicted here)
    fitting: list[tuple[int, int, str]] = []
    candidates = sorted(nodes, key=lambda n: str(n["metadata"]["name"]))
    for node in candidates:
        name = node["metadata"]["name"]
        served = dra.resources(node) if dra is not None else set()
        wanted = Counter({r: c for r, c in requested.items() if r not in served})
        free = room(node)
        free.subtract(used.get(name, Counter()))
        problems, resolvable = _problems(pod, node, wanted, free, dra)
        if problems:
            reasons.update(problems)
            victimless += resolvable
            continue
        devices = [r for r in wanted if is_extended_resource_name(r)]
        siblings = (spread or {}).get(name, Counter())[owner] if owner else 0
        fitting.append((siblings, -sum(free[r] - wanted[r] for r in devices), name))
    if fitting:
        return Decision(min(fitting)[-1], "")
    total = len(candidates)
    preemption = Counter(
        {
            "No preemption victims found for incoming pod": victimless,
            "Preemption is not helpful for scheduling": total - victimless,
        }
    )
    after = f"preemption: {unschedulable_message(total, +preemption)}"
    if dra is not None:  # the DynamicResources plugin's PostFilter speaks first
        after = f"no new claims to deallocate, {after}"
    return Decision(None, f"{unschedulable_message(total, reasons)} {after}")


def _problems(
    pod: Object, node: Object, wanted: Counter[str], free: Counter[str], dra: NodeCheck | None
) -> tuple[list[str], bool]:
    """Why the pod does not fit the node (the filters in the scheduler's order, the first that
    fails), and whether evicting pods could make it fit (preemption's question)."""
    if not is_ready(node):
        return ["node(s) were not ready"], False
    if not matches_node_selection(pod, node):
        return ["node(s) didn't match Pod's node affinity/selector"], False
    taints = untolerated_taints(pod, node)
    if taints:
        key, value = taints[0].get("key"), taints[0].get("value", "")
        return [f"node(s) had untolerated taint {{{key}: {value}}}"], False
    short = shortages(wanted, free)
    if short:
        # More than the node has at all: no eviction helps (UnschedulableAndUnresolvable).
        total = room(node)
        return short, all(wanted[r] <= total[r] for r in wanted if r != "pods")
    problem = dra.problem(pod, node) if dra is not None else None
    return ([problem], False) if problem is not None else ([], False)


def shortages(wanted: Mapping[str, int], free: Mapping[str, int]) -> list[str]:
    """NodeResourcesFit's reasons: no room for one more pod, and each resource short."""
    reasons = ["Too many pods"] if free.get("pods", 0) < wanted.get("pods", 0) else []
    return reasons + [
        f"Insufficient {r}"
        for r, count in sorted(wanted.items())
        if r != "pods" and count > 0 and free.get(r, 0) < count
    ]


def unschedulable_message(total: int, reasons: Mapping[str, int]) -> str:
    """The scheduler's FitError: each reason with how many nodes gave it, sorted as text."""
    details = sorted(f"{count} {reason}" for reason, count in reasons.items())
    return f"0/{total} nodes are available" + (f": {', '.join(details)}." if details else ".")


def controller_uid(pod: Object) -> str | None:
    """The uid of the pod's controller (a Deployment's ReplicaSet, a Job...), whose pods
    the default topology spreading keeps apart."""
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if owner.get("controller"):
            return str(owner.get("uid"))
    return None
