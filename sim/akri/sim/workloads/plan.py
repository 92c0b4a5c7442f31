"""What the workload controllers decide, as pure functions over plain object dicts.

DaemonSet: one pod per node that its template fits (node selection, taints), replaced node by
node within `maxUnavailable`/`maxSurge` when the template changes. ReplicaSet: as many pods
as `replicas`. Deployment: one ReplicaSet per template, the new one scaled up and the old ones
down within `maxSurge`/`maxUnavailable` (or all old ones first, for `Recreate`). Job: pods
until enough succeeded or too many failed. Each writes the status fields `kubectl rollout
status` and `helm --wait` read.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from akri.sim import scheduling

Object = Mapping[str, Any]
JSON = dict[str, Any]

TEMPLATE_HASH: Final = "pod-template-hash"
REVISION_HASH: Final = "controller-revision-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
_SAFE: Final = "bcdfghjklmnpqrstvwxz2456789"  # no vowels: a hash never spells a word
DAEMON_TOLERATIONS: Final = tuple(
    {"key": key, "operator": "Exists", "effect": effect}
    for key, effect in (
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    )
)
"""What the DaemonSet controller adds to its pods, so node conditions never evict them."""


def template_hash(template: Object, collisions: int = 0) -> str:
    """A short stable name for a pod template (label values and ReplicaSet name suffixes)."""
    digest = hashlib.sha256(
        json.dumps([template, collisions], sort_keys=True, separators=(",", ":")).encode()
    ).digest()
    return "".join(_SAFE[b % len(_SAFE)] for b in digest[:10])


def _meta(obj: Object) -> Object:
    return obj.get("metadata") or {}


def _spec(obj: Object) -> Object:
    return obj.get("spec") or {}


def _status(obj: Object) -> Object:
    return obj.get("status") or {}


def controller_of(obj: Object) -> Object | None:
    """The ownerReference marked `controller: true`, if any."""
    return next((r for r in _meta(obj).get("ownerReferences") or [] if r.get("controller")), None)


def controller_ref(owner: Object) -> JSON:
    meta = _meta(owner)
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def is_active(pod: Object) -> bool:
    """Counted by its controller: not being deleted, not finished."""
    return not _meta(pod).get("deletionTimestamp") and _status(pod).get("phase") not in (
        scheduling.TERMINAL_PHASES
    )


def _ready_since(pod: Object) -> str | None:
    conditions = _status(pod).get("conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "True":
        return None
    return str(ready.get("lastTransitionTime") or "")


def is_ready(pod: Object) -> bool:
    return is_active(pod) and _ready_since(pod) is not None


def is_available(pod: Object, min_ready_s: int, now: datetime) -> bool:
    """Ready for at least `minReadySeconds`."""
    since = _ready_since(pod) if is_active(pod) else None
    if since is None:
        return False
    if min_ready_s <= 0 or not since:
        return True
    return (now - datetime.fromisoformat(since.replace("Z", "+00:00"))).total_seconds() >= (
        min_ready_s
    )


def scaled(value: Any, total: int, *, round_up: bool) -> int:
    """An IntOrString of a rolling update (`1` or `"25%"`) as a pod count out of `total`."""
    if isinstance(value, str) and value.endswith("%"):
        share = total * int(value[:-1]) / 100
        return math.ceil(share) if round_up else math.floor(share)
    return int(value or 0)


def rolling_budget(rolling: Object | None, total: int, default_unavailable: Any) -> tuple[int, int]:
    """(maxSurge, maxUnavailable) as counts; both zero would stall, so unavailable is 1."""
    rolling = rolling or {}
    surge = scaled(rolling.get("maxSurge", 0), total, round_up=True)
    unavailable = scaled(rolling.get("maxUnavailable", default_unavailable), total, round_up=False)
    return surge, (unavailable if surge or unavailable else 1)


def pod_from_template(owner: Object, template: Object, extra_labels: Mapping[str, str]) -> JSON:
    """A pod for `owner` (generateName `<owner>-`), labelled and owned as its controller."""
    template_meta = template.get("metadata") or {}
    meta: JSON = {
        "generateName": f"{_meta(owner)['name']}-",
        "namespace": _meta(owner).get("namespace", "default"),
        "labels": {**(template_meta.get("labels") or {}), **extra_labels},
        "ownerReferences": [controller_ref(owner)],
    }
    if template_meta.get("annotations"):
        meta["annotations"] = dict(template_meta["annotations"])
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": copy.deepcopy(dict(template.get("spec") or {})),
    }


def conditions_changed(old: Sequence[Object], new: Sequence[Object]) -> bool:
    def strip(conditions: Sequence[Object]) -> list[JSON]:
        ignored = ("lastUpdateTime", "lastTransitionTime")
        return [{k: v for k, v in c.items() if k not in ignored} for c in conditions]

    return strip(old) != strip(new)


# --- DaemonSet ---------------------------------------------------------------------------


def daemon_pod(daemonset: Object, node: str, revision: str) -> JSON:
    """A DaemonSet's pod for one node: pinned by node affinity, tolerating node conditions."""
    pod = pod_from_template(daemonset, _spec(daemonset).get("template") or {}, {})
    pod["metadata"]["labels"][REVISION_HASH] = revision
    spec = pod["spec"]
    pin = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    node_affinity = spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [pin]}
    tolerations = spec.setdefault("tolerations", [])
    tolerations += [t for t in DAEMON_TOLERATIONS if t not in tolerations]
    return pod


def daemon_pod_node(pod: Object) -> str | None:
    """The node a DaemonSet pod is for: its nodeName, or the node its affinity pins."""
    if _spec(pod).get("nodeName"):
        return str(_spec(pod)["nodeName"])
    terms = (
        ((_spec(pod).get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for expression in term.get("matchFields") or []:
            if expression.get("key") == "metadata.name" and expression.get("values"):
                return str(expression["values"][0])
    return None


def should_run_daemon(daemonset: Object, node: Object) -> bool:
    """Node selection and taints (NoSchedule and NoExecute) decide, not readiness."""
    probe = {"spec": _spec(daemonset).get("template", {}).get("spec") or {}}
    probe["spec"] = {
        **probe["spec"],
        "tolerations": [*(probe["spec"].get("tolerations") or []), *DAEMON_TOLERATIONS],
    }
    return scheduling.matches_node_selection(probe, node) and not scheduling.untolerated_taints(
        probe, node
    )


@dataclass
class PodPlan:
    """What a DaemonSet, ReplicaSet or Job controller does next, and the status it writes."""

    create: list[JSON] = field(default_factory=list)
    delete: list[Object] = field(default_factory=list)
    status: JSON = field(default_factory=dict)
    waiting_for_min_ready: bool = False
    """Some pods are ready but not yet for minReadySeconds (no event will say when)."""


@dataclass
class _DaemonPlan:
    create: list[str] = field(default_factory=list)
    """Nodes that get a new pod."""
    delete: list[Object] = field(default_factory=list)


def plan_daemonset(
    daemonset: Object, nodes: Iterable[Object], pods: Iterable[Object], now: datetime
) -> PodPlan:
    """Pods to create and delete, and the status to write, for one DaemonSet."""
    spec = _spec(daemonset)
    revision = template_hash(spec.get("template") or {})
    min_ready = int(spec.get("minReadySeconds") or 0)
    plan = _DaemonPlan()
    by_node: dict[str, list[Object]] = {}
    for pod in sorted(pods, key=_created):
        if is_active(pod):
            by_node.setdefault(daemon_pod_node(pod) or "", []).append(pod)
        elif _status(pod).get("phase") == "Failed" and not _meta(pod).get("deletionTimestamp"):
            plan.delete.append(pod)  # a failed daemon pod is replaced
    wanted = sorted(n["metadata"]["name"] for n in nodes if should_run_daemon(daemonset, n))
    misscheduled = [node for node in by_node if node not in wanted]
    for node in misscheduled:
        plan.delete += by_node.pop(node)
    updated: dict[str, Object] = {}
    old: dict[str, Object] = {}
    for node, held in by_node.items():
        new = [p for p in held if _labels(p).get(REVISION_HASH) == revision]
        stale = [p for p in held if p not in new]
        if new:
            updated[node] = new[0]
            plan.delete += new[1:]
            # a surge pod replaces the old one once it is available
            if stale and is_available(new[0], min_ready, now):
                plan.delete += stale
            elif stale:
                old[node] = stale[0]
                plan.delete += stale[1:]
        else:
            old[node] = stale[0]
            plan.delete += stale[1:]
    plan.create = [node for node in wanted if node not in by_node]

    def available(node: str) -> bool:
        return any(is_available(p, min_ready, now) for p in by_node.get(node, []))

    _roll_daemons(daemonset, wanted, updated, old, available, plan)
    available_count = sum(1 for node in wanted if available(node))
    ready_count = sum(1 for n in wanted if any(is_ready(p) for p in by_node.get(n, [])))
    status = {
        "observedGeneration": _meta(daemonset).get("generation", 1),
        "desiredNumberScheduled": len(wanted),
        "currentNumberScheduled": len(by_node),
        "numberMisscheduled": len(misscheduled),
        "numberReady": ready_count,
        "updatedNumberScheduled": len(updated),
        "numberAvailable": available_count,
        "numberUnavailable": len(wanted) - available_count,
    }
    return PodPlan(
        [daemon_pod(daemonset, node, revision) for node in plan.create],
        plan.delete,
        status,
        ready_count > available_count,
    )


def _roll_daemons(
    daemonset: Object,
    wanted: Sequence[str],
    updated: Mapping[str, Object],
    old: Mapping[str, Object],
    available: Callable[[str], bool],
    plan: _DaemonPlan,
) -> None:
    """Replace old-template pods node by node within the update strategy's budget."""
    strategy = _spec(daemonset).get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return  # OnDelete: a new pod only where the old one was deleted
    surge, max_unavailable = rolling_budget(strategy.get("rollingUpdate"), len(wanted), 1)
    if surge:
        surging = sum(1 for node in old if node in updated)
        for node in sorted(old.keys() - updated.keys()):
            if surging >= surge:
                break
            plan.create.append(node)
            surging += 1
        return
    unavailable = sum(1 for node in wanted if not available(node))
    for node in sorted(old.keys() - updated.keys()):
        if not available(node):
            plan.delete.append(old[node])  # already unavailable: replacing it costs nothing
        elif unavailable < max_unavailable:
            plan.delete.append(old[node])
            unavailable += 1


def _labels(obj: Object) -> Mapping[str, str]:
    return _meta(obj).get("labels") or {}


def _created(obj: Object) -> str:
    return str(_meta(obj).get("creationTimestamp") or "")


# --- ReplicaSet --------------------------------------------------------------------------


def _deletion_order(pod: Object) -> tuple[bool, bool, bool, str]:
    """Which surplus pod goes first: unscheduled, then not running, then not ready, newest."""
    return (
        bool(_spec(pod).get("nodeName")),
        _status(pod).get("phase") == "Running",
        is_ready(pod),
        "".join(chr(0x10FFFF - ord(c)) for c in _created(pod)),
    )


def plan_replicaset(replicaset: Object, pods: Iterable[Object], now: datetime) -> PodPlan:
    spec = _spec(replicaset)
    min_ready = int(spec.get("minReadySeconds") or 0)
    active = [p for p in pods if is_active(p)]
    wanted = int(spec.get("replicas", 1))
    plan = PodPlan()
    template = spec.get("template") or {}
    plan.create = [pod_from_template(replicaset, template, {}) for _ in range(wanted - len(active))]
    plan.delete = sorted(active, key=_deletion_order)[: max(0, len(active) - wanted)]
    selector_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    plan.status = {
        "observedGeneration": _meta(replicaset).get("generation", 1),
        "replicas": len(active),
        "fullyLabeledReplicas": sum(
            1 for p in active if all(_labels(p).get(k) == v for k, v in selector_labels.items())
        ),
        "readyReplicas": sum(1 for p in active if is_ready(p)),
        "availableReplicas": sum(1 for p in active if is_available(p, min_ready, now)),
    }
    plan.waiting_for_min_ready = plan.status["readyReplicas"] > plan.status["availableReplicas"]
    return plan


# --- Job -------------------------------------------------------------------------------

JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
JOB_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"


def _job_condition(kind: str, reason: str, message: str, now: str) -> JSON:
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": now,
        "lastTransitionTime": now,
    }


def plan_job(job: Object, pods: Iterable[Object], now: str) -> PodPlan:
    """Up to `parallelism` pods at a time until `completions` pods succeeded (Complete), or
    until more than `backoffLimit` failed (Failed, its running pods deleted). A finished Job
    creates nothing more; its status says what kubectl and `helm --wait` read."""
    spec, status = _spec(job), _status(job)
    pods = list(pods)
    succeeded = sum(1 for p in pods if _status(p).get("phase") == "Succeeded")
    failed = sum(1 for p in pods if _status(p).get("phase") == "Failed")
    active = [p for p in pods if is_active(p)]
    completions, parallelism = int(spec.get("completions", 1)), int(spec.get("parallelism", 1))
    conditions: list[JSON] = [dict(c) for c in status.get("conditions") or []]
    finished = any(
        c.get("type") in ("Complete", "Failed") and c.get("status") == "True" for c in conditions
    )
    plan = PodPlan()
    extra: JSON = {}
    if not finished and succeeded >= completions:
        conditions += [
            _job_condition("SuccessCriteriaMet", "CompletionsReached", "Reached expected "
                           "number of succeeded pods", now),
            _job_condition("Complete", "CompletionsReached", "Reached expected number of "
                           "succeeded pods", now),
        ]  # fmt: skip
        extra["completionTime"] = now
    elif not finished and failed > int(spec.get("backoffLimit", 6)):
        message = "Job has reached the specified backoff limit"
        conditions += [
            _job_condition("FailureTarget", "BackoffLimitExceeded", message, now),
            _job_condition("Failed", "BackoffLimitExceeded", message, now),
        ]
        plan.delete = active
    elif not finished:
        labels = {JOB_NAME_LABEL: _meta(job)["name"], JOB_UID_LABEL: _meta(job)["uid"]}
        wanted = min(parallelism, completions - succeeded) - len(active)
        template = spec.get("template") or {}
        plan.create = [pod_from_template(job, template, labels) for _ in range(wanted)]
    plan.status = {
        "active": len(active) - len(plan.delete),
        "ready": sum(1 for p in active if is_ready(p)),
        "succeeded": succeeded,
        "failed": failed,
        "startTime": status.get("startTime") or now,
        **({"completionTime": status["completionTime"]} if "completionTime" in status else {}),
        **extra,
        "conditions": conditions,
    }
    return plan


# --- Deployment --------------------------------------------------------------------------


def replicaset_for(deployment: Object, revision: int, collisions: int = 0) -> JSON:
    """The ReplicaSet of the deployment's current template, scaled to zero."""
    spec = _spec(deployment)
    template = copy.deepcopy(dict(spec.get("template") or {}))
    pod_hash = template_hash(template, collisions)
    template.setdefault("metadata", {}).setdefault("labels", {})[TEMPLATE_HASH] = pod_hash
    selector = copy.deepcopy(dict(spec.get("selector") or {}))
    selector.setdefault("matchLabels", {})[TEMPLATE_HASH] = pod_hash
    meta = _meta(deployment)
    replicaset: JSON = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": f"{meta['name']}-{pod_hash}",
            "namespace": meta.get("namespace", "default"),
            "labels": dict(template["metadata"]["labels"]),
            "annotations": {REVISION: str(revision)},
            "ownerReferences": [controller_ref(deployment)],
        },
        "spec": {"replicas": 0, "selector": selector, "template": template},
    }
    if spec.get("minReadySeconds"):
        replicaset["spec"]["minReadySeconds"] = spec["minReadySeconds"]
    return replicaset


def _without_hash(template: Object) -> Object:
    labels = {
        k: v
        for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()
        if k != TEMPLATE_HASH
    }
    return {**template, "metadata": {**(template.get("metadata") or {}), "labels": labels}}


def is_current(deployment: Object, replicaset: Object) -> bool:
    """The ReplicaSet runs the deployment's template (ignoring the hash label), as Helm checks."""
    template = _spec(replicaset).get("template") or {}
    return _without_hash(template) == _without_hash(_spec(deployment).get("template") or {})


def revision_of(replicaset: Object) -> int:
    value = (_meta(replicaset).get("annotations") or {}).get(REVISION, "0")
    return int(value) if str(value).isdigit() else 0


@dataclass
class RolloutPlan:
    scale: dict[str, int] = field(default_factory=dict)
    """ReplicaSet name -> new spec.replicas."""
    delete: list[str] = field(default_factory=list)
    """Old ReplicaSets beyond revisionHistoryLimit."""


def plan_rollout(deployment: Object, new: Object, old: Sequence[Object]) -> RolloutPlan:
    """How to scale the new and old ReplicaSets one step towards the deployment's spec."""
    spec = _spec(deployment)
    replicas = int(spec.get("replicas", 1))
    strategy = spec.get("strategy") or {}
    plan = RolloutPlan()
    new_name, new_now = _meta(new)["name"], int(_spec(new).get("replicas", 0))
    old_scaled = [rs for rs in old if int(_spec(rs).get("replicas", 0)) > 0]
    if strategy.get("type") == "Recreate":
        for rs in old_scaled:
            plan.scale[_meta(rs)["name"]] = 0
        old_running = any(int(_status(rs).get("replicas") or 0) for rs in old)
        if not old_scaled and not old_running and new_now != replicas:
            plan.scale[new_name] = replicas
    else:
        _roll_replicasets(replicas, strategy.get("rollingUpdate"), new, old_scaled, plan)
    limit = int(spec.get("revisionHistoryLimit", 10))
    idle = sorted(
        (rs for rs in old if rs not in old_scaled and not int(_status(rs).get("replicas") or 0)),
        key=revision_of,
    )
    plan.delete = [_meta(rs)["name"] for rs in idle[: max(0, len(idle) - limit)]]
    return plan


def _roll_replicasets(
    replicas: int, rolling: Object | None, new: Object, old: Sequence[Object], plan: RolloutPlan
) -> None:
    surge, max_unavailable = rolling_budget(rolling, replicas, "25%")
    new_name, new_now = _meta(new)["name"], int(_spec(new).get("replicas", 0))
    total = new_now + sum(int(_spec(rs).get("replicas", 0)) for rs in old)
    if new_now > replicas or not old:
        target = replicas
    else:
        target = min(replicas, new_now + max(0, replicas + surge - total))
    if target != new_now:
        plan.scale[new_name] = target
    # old pods may go while at least replicas - maxUnavailable stay available
    min_available = replicas - max_unavailable
    new_unavailable = max(0, new_now - int(_status(new).get("availableReplicas") or 0))
    budget = max(0, total - min_available - new_unavailable)
    available = sum(int(_status(rs).get("availableReplicas") or 0) for rs in old)
    available += int(_status(new).get("availableReplicas") or 0)
    for rs in sorted(old, key=revision_of):
        now_replicas = int(_spec(rs).get("replicas", 0))
        unhealthy = max(0, now_replicas - int(_status(rs).get("availableReplicas") or 0))
        healthy_budget = max(0, available - min_available)
        cut = min(now_replicas, budget, unhealthy + healthy_budget)
        if cut:
            plan.scale[_meta(rs)["name"]] = now_replicas - cut
            budget -= cut
            available -= max(0, cut - unhealthy)


def deployment_status(
    deployment: Object, new: Object | None, replicasets: Sequence[Object], now: str
) -> JSON:
    """replicas, updated/ready/available counts and the Available and Progressing conditions."""
    spec = _spec(deployment)
    wanted = int(spec.get("replicas", 1))

    def total(path: str, sets: Iterable[Object]) -> int:
        return sum(int(_status(rs).get(path) or 0) for rs in sets)

    replicas = total("replicas", replicasets)
    available = total("availableReplicas", replicasets)
    updated = total("replicas", [new] if new is not None else [])
    _, max_unavailable = rolling_budget(
        (spec.get("strategy") or {}).get("rollingUpdate"), wanted, "25%"
    )
    if (spec.get("strategy") or {}).get("type") == "Recreate":
        max_unavailable = 0
    complete = updated == wanted and replicas == wanted and available >= wanted
    new_name = _meta(new)["name"] if new is not None else ""
    available_condition = {
        "type": "Available",
        "status": "True" if available >= wanted - max_unavailable else "False",
        "reason": "MinimumReplicasAvailable"
        if available >= wanted - max_unavailable
        else "MinimumReplicasUnavailable",
        "message": "Deployment has minimum availability."
        if available >= wanted - max_unavailable
        else "Deployment does not have minimum availability.",
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }
    progressing = {
        "type": "Progressing",
        "status": "True",
        "reason": "NewReplicaSetAvailable" if complete else "ReplicaSetUpdated",
        "message": f'ReplicaSet "{new_name}" has successfully progressed.'
        if complete
        else f'ReplicaSet "{new_name}" is progressing.',
        "lastUpdateTime": now,
        "lastTransitionTime": now,
    }
    return {
        "observedGeneration": _meta(deployment).get("generation", 1),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": total("readyReplicas", replicasets),
        "availableReplicas": available,
        "unavailableReplicas": max(0, replicas - available),
        "conditions": [available_condition, progressing],
    }
