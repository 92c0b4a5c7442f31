"""The workload controllers' decisions (pure): rollouts stay within maxSurge/maxUnavailable."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from akri.sim.workloads import plan

NOW = datetime(2026, 1, 1, tzinfo=UTC)
READY = [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}]


def deployment(replicas: int, image: str, **strategy: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "d1", "generation": 2},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": strategy or {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]},
            },
        },
    }


def with_status(replicaset: dict[str, Any], available: int | None = None) -> dict[str, Any]:
    """The ReplicaSet once its pods exist; `available` of them (default: all) available."""
    replicas = replicaset["spec"]["replicas"]
    ready = replicas if available is None else available
    replicaset["status"] = {
        "replicas": replicas,
        "readyReplicas": ready,
        "availableReplicas": ready,
    }
    return replicaset


@pytest.mark.parametrize(
    ("replicas", "rolling", "max_total", "min_available"),
    [
        (4, {}, 5, 3),  # 25 % / 25 %: surge rounds up, unavailable down
        (3, {"maxSurge": 0, "maxUnavailable": 1}, 3, 2),
        (3, {"maxSurge": 1, "maxUnavailable": 0}, 4, 3),
        (10, {"maxSurge": "50%", "maxUnavailable": "20%"}, 15, 8),
        (1, {"maxSurge": 0, "maxUnavailable": 0}, 1, 0),  # both zero: one may be unavailable
    ],
)
def test_rolling_update_never_exceeds_its_budget(
    replicas: int, rolling: dict[str, Any], max_total: int, min_available: int
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": rolling}
    new_deployment = deployment(replicas, "v2", **strategy)
    old = with_status({**plan.replicaset_for(deployment(replicas, "v1"), 1)})
    old["spec"]["replicas"] = replicas
    old = with_status(old)
    new = with_status(plan.replicaset_for(new_deployment, 2))
    for _ in range(4 * replicas + 4):
        decided = plan.plan_rollout(new_deployment, new, [old])
        for rs in (old, new):
            name = rs["metadata"]["name"]
            rs["spec"]["replicas"] = decided.scale.get(name, rs["spec"]["replicas"])
        # new pods start unavailable, old ones stay available until removed
        with_status(new, available=new["status"]["availableReplicas"])
        new["status"]["replicas"] = new["spec"]["replicas"]
        with_status(old)
        total = new["spec"]["replicas"] + old["spec"]["replicas"]
        available = new["status"]["availableReplicas"] + old["status"]["availableReplicas"]
        assert total <= max_total
        assert available >= min_available
        with_status(new)  # the new pods become available
        if new["spec"]["replicas"] == replicas and not old["spec"]["replicas"]:
            break
    assert (new["spec"]["replicas"], old["spec"]["replicas"]) == (replicas, 0)


def test_recreate_scales_the_new_replicaset_only_when_old_pods_are_gone() -> None:
    recreate = deployment(2, "v2", type="Recreate")
    old = plan.replicaset_for(deployment(2, "v1"), 1)
    old["spec"]["replicas"] = 2
    with_status(old)
    new = plan.replicaset_for(recreate, 2)
    assert plan.plan_rollout(recreate, new, [old]).scale == {old["metadata"]["name"]: 0}
    old["spec"]["replicas"] = 0
    assert plan.plan_rollout(recreate, new, [old]).scale == {}  # its pods still run
    with_status(old)
    assert plan.plan_rollout(recreate, new, [old]).scale == {new["metadata"]["name"]: 2}


def node(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": {"role": name}}, "spec": spec}


def daemonset(**pod_spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "d", "namespace": "default", "uid": "u1", "generation": 1},
        "spec": {
            "selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": pod_spec},
        },
    }


def test_daemon_pods_go_where_selectors_and_taints_allow() -> None:
    taint = {"key": "gpu", "value": "yes", "effect": "NoSchedule"}
    nodes = [node("a"), node("b", taints=[taint]), node("c", unschedulable=True)]
    decided = plan.plan_daemonset(daemonset(), nodes, [], NOW)
    assert [plan.daemon_pod_node(p) for p in decided.create] == ["a", "c"]
    tolerant = daemonset(tolerations=[{"key": "gpu", "operator": "Exists"}], nodeSelector={})
    assert len(plan.plan_daemonset(tolerant, nodes, [], NOW).create) == 3
    picky = daemonset(nodeSelector={"role": "b"}, tolerations=[{"operator": "Exists"}])
    assert [plan.daemon_pod_node(p) for p in plan.plan_daemonset(picky, nodes, [], NOW).create] == [
        "b"
    ]


def test_daemonset_update_replaces_one_available_pod_at_a_time() -> None:
    nodes = [node("a"), node("b"), node("c")]
    old_set = daemonset(containers=[{"name": "m", "image": "v1"}])
    pods = []
    for pod in plan.plan_daemonset(old_set, nodes, [], NOW).create:
        pod["metadata"]["uid"] = pod["metadata"]["name"] = plan.daemon_pod_node(pod)
        pod["status"] = {"phase": "Running", "conditions": READY}
        pods.append(pod)
    new_set = daemonset(containers=[{"name": "m", "image": "v2"}])
    decided = plan.plan_daemonset(new_set, nodes, pods, NOW)
    assert [p["metadata"]["uid"] for p in decided.delete] == ["a"]
    assert decided.status["updatedNumberScheduled"] == 0
    assert decided.status["numberAvailable"] == decided.status["desiredNumberScheduled"] == 3


def job(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "once", "namespace": "default", "uid": "j1"},
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 1,
            **spec,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "m"}]}},
        },
    }


def job_pod(phase: str) -> dict[str, Any]:
    return {"metadata": {"name": f"once-{phase}"}, "status": {"phase": phase}}


def conditions(decided: plan.PodPlan) -> list[str]:
    return [c["type"] for c in decided.status["conditions"] if c["status"] == "True"]


def test_a_job_runs_pods_until_enough_succeeded() -> None:
    started = plan.plan_job(job(completions=3, parallelism=2), [], "t0")
    assert len(started.create) == 2
    (first, _) = started.create
    assert first["metadata"]["labels"] == {
        plan.JOB_NAME_LABEL: "once",
        plan.JOB_UID_LABEL: "j1",
    }
    assert first["metadata"]["ownerReferences"][0]["kind"] == "Job"
    one_left = plan.plan_job(
        job(completions=3, parallelism=2),
        [job_pod("Succeeded"), job_pod("Succeeded"), job_pod("Running")],
        "t1",
    )
    assert one_left.create == []  # the running pod is the third completion
    assert conditions(one_left) == []
    done = plan.plan_job(job(completions=3), [job_pod("Succeeded")] * 3, "t2")
    assert conditions(done) == ["SuccessCriteriaMet", "Complete"]
    assert done.status["completionTime"] == "t2"
    assert (done.status["succeeded"], done.status["active"]) == (3, 0)
    finished = {**job(completions=3), "status": done.status}
    assert plan.plan_job(finished, [job_pod("Succeeded")] * 3, "t3").status == done.status


def test_a_job_fails_after_its_backoff_limit_and_stops_its_pods() -> None:
    retried = plan.plan_job(job(backoffLimit=1), [job_pod("Failed")], "t0")
    assert len(retried.create) == 1
    assert conditions(retried) == []
    running = job_pod("Running")
    failed = plan.plan_job(
        job(backoffLimit=1, parallelism=2, completions=2),
        [job_pod("Failed"), job_pod("Failed"), running],
        "t1",
    )
    assert conditions(failed) == ["FailureTarget", "Failed"]
    assert failed.create == []
    assert failed.delete == [running]
    assert failed.status["failed"] == 2
    after = {**job(backoffLimit=1), "status": failed.status}
    assert plan.plan_job(after, [job_pod("Failed")] * 3, "t2").create == []
