"""Pods of the project's image run as real processes on the simulated nodes.

One cluster (module-scoped processes are what cost time) runs an agent DaemonSet the way the
chart deploys it: each pod is a real `akri-agent` in its own mount namespace with the node's
kubelet directories at their real paths and in-cluster credentials.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from akri.sim.cluster import Cluster, RuntimeOptions
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

IMAGE = "ghcr.io/akri-py/akri-py:0.1.0"
DEBUG_ECHO = yaml.safe_load(Path("crds/examples/debugEcho.yaml").read_text())
pytestmark = [
    needs_kubectl,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
    ),
]


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    options = RuntimeOptions(backoff_initial_s=0.2, backoff_max_s=1.0)
    async with Cluster(["node-0", "node-1"], workdir=socket_dir, processes=options) as running:
        yield running


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster.kubeconfig, tmp_path)


def host_volume(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}}


def agent_daemonset() -> dict[str, Any]:
    """The agent as the chart deploys it (without probes or a metrics port)."""
    labels = {"app": "agent"}
    env = [
        {"name": "AGENT_NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "ENABLE_DEBUG_ECHO", "value": "true"},
        {"name": "METRICS_PORT", "value": "0"},
        {"name": "LOG_FORMAT", "value": "text"},
    ]
    mounts = {
        "device-plugins": "/var/lib/kubelet/device-plugins",
        "pod-resources": "/var/lib/kubelet/pod-resources",
        "discovery-handlers": "/var/lib/akri",
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [
                        {
                            "name": "agent",
                            "image": IMAGE,
                            "command": ["akri-agent"],
                            "env": env,
                            "volumeMounts": [
                                {"name": name, "mountPath": path} for name, path in mounts.items()
                            ],
                        }
                    ],
                    "volumes": [host_volume(name, path) for name, path in mounts.items()],
                },
            },
        },
    }


async def apply(kubectl: Kubectl, tmp_path: Path, *documents: dict[str, Any]) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    await kubectl("apply", "-f", str(path))


async def agent_pods(kubectl: Kubectl) -> dict[str, dict[str, Any]]:
    """Node -> its Running agent pod."""
    listed = json.loads(await kubectl("get", "pods", "-l", "app=agent", "-o", "json"))["items"]
    return {
        pod["spec"]["nodeName"]: pod
        for pod in listed
        if pod.get("status", {}).get("phase") == "Running"
        and pod["status"]["containerStatuses"][0]["ready"]
    }


async def test_agent_daemonset_runs_a_real_agent_per_node(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    await apply(kubectl, tmp_path, agent_daemonset(), DEBUG_ECHO)
    await kubectl("rollout", "status", "daemonset/agent", "--timeout=20s", deadline_s=25)

    async def instances_on_both_nodes() -> bool:
        found = json.loads(await kubectl("get", "akrii", "-o", "json"))["items"]
        return len(found) == 2 and all(
            sorted(i["spec"]["nodes"]) == ["node-0", "node-1"] for i in found
        )

    # the agents reached the API with their in-cluster credentials and the kubelets' sockets
    await eventually(instances_on_both_nodes, "both agents to report both devices", 30)
    # the configuration-level plugin registers after the Instances are written
    await eventually(
        lambda: all(
            "akri.sh/akri-debug-echo-foo" in node.kubelet.resources()
            for node in cluster.nodes.values()
        ),
        "both kubelets to list the configuration's resource",
    )

    pods = await agent_pods(kubectl)
    first = pods["node-0"]["metadata"]["name"]
    logged = await kubectl("logs", first)
    assert "node-0" in logged

    await kubectl("delete", "pod", first)

    async def replaced() -> bool:
        now = await agent_pods(kubectl)
        return "node-0" in now and now["node-0"]["metadata"]["name"] != first

    await eventually(replaced, "a new agent pod on node-0", 30)


def pod(name: str, container: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": IMAGE, **container}]},
    }


async def container_status(kubectl: Kubectl, name: str) -> dict[str, Any]:
    found = json.loads(await kubectl("get", "pod", name, "-o", "json"))
    statuses = found.get("status", {}).get("containerStatuses") or [{}]
    return dict(statuses[0])


async def test_failing_probes_unready_and_restart_a_container(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    never_ready = {"tcpSocket": {"port": 1}, "periodSeconds": 1, "failureThreshold": 1}
    dead = {"exec": {"command": ["test", "-e", "/nonexistent"]}, "periodSeconds": 1}
    await apply(
        kubectl,
        tmp_path,
        pod("alive", {"command": ["sleep", "infinity"], "readinessProbe": never_ready}),
        pod(
            "dying",
            {"command": ["sleep", "infinity"], "livenessProbe": {**dead, "failureThreshold": 1}},
        ),
        pod("crashing", {"command": ["sh", "-c", "echo run by $HOSTNAME; exit 3"]}),
    )

    async def restarted(name: str) -> dict[str, Any] | None:
        status = await container_status(kubectl, name)
        return status if status.get("restartCount", 0) >= 1 and status.get("lastState") else None

    dying = await eventually(lambda: restarted("dying"), "the liveness probe to restart dying")
    assert dying["lastState"]["terminated"]["reason"] == "Error"  # killed by SIGTERM
    crashing = await eventually(lambda: restarted("crashing"), "crashing to be restarted")
    assert crashing["lastState"]["terminated"]["exitCode"] == 3
    assert "run by crashing" in await kubectl("logs", "crashing", "--previous")

    alive = await container_status(kubectl, "alive")
    assert alive["state"].get("running")
    assert not alive["ready"]
    assert alive["restartCount"] == 0
    conditions = json.loads(await kubectl("get", "pod", "alive", "-o", "json"))["status"]
    ready = next(c for c in conditions["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False"


async def test_a_cluster_stopped_while_a_pod_is_terminating_leaves_no_process_or_task(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    """The bridge is cancelled while it waits out a pod's grace period: the pod's process is
    still stopped (SIGKILL after the grace) and no task waiting on it is left (the autouse
    leak checks fail the test otherwise)."""
    trapping, terminated = cluster.workdir / "trapping", cluster.workdir / "terminated"
    script = f"trap 'touch {terminated}' TERM; touch {trapping}; while :; do sleep 0.1; done"
    stubborn = pod("stubborn", {"command": ["sh", "-c", script]})
    stubborn["spec"]["terminationGracePeriodSeconds"] = 3
    await apply(kubectl, tmp_path, stubborn)

    # Running is not enough: a SIGTERM before the shell has set its trap kills it at once.
    await eventually(trapping.exists, "the stubborn pod to trap SIGTERM", 30)
    await kubectl("delete", "pod", "stubborn", "--wait=false")
    await eventually(terminated.exists, "SIGTERM to the stubborn pod", 30)
    # the cluster stops now, inside the pod's grace period


async def test_jobs_run_to_completion_or_to_their_backoff_limit(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    def job(name: str, exit_code: int) -> dict[str, Any]:
        container = {"name": "main", "image": IMAGE, "command": ["sh", "-c", f"exit {exit_code}"]}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {
                "backoffLimit": 1,
                "template": {"spec": {"restartPolicy": "Never", "containers": [container]}},
            },
        }

    await apply(kubectl, tmp_path, job("works", 0), job("breaks", 2))
    await kubectl("wait", "--for=condition=Complete", "job/works", "--timeout=30s", deadline_s=35)
    await kubectl("wait", "--for=condition=Failed", "job/breaks", "--timeout=30s", deadline_s=35)
    pods = json.loads(await kubectl("get", "pods", "-o", "json"))["items"]
    phases = sorted(
        (p["metadata"]["labels"]["batch.kubernetes.io/job-name"], p["status"]["phase"])
        for p in pods
    )
    assert phases == [("breaks", "Failed"), ("breaks", "Failed"), ("works", "Succeeded")]
