"""DaemonSets, Deployments and ReplicaSets on the simulated cluster, driven with real kubectl."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from akri.sim.cluster import Cluster
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

pytestmark = needs_kubectl


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(["node-0", "node-1", "node-2"], workdir=socket_dir) as running:
        yield running


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster.kubeconfig, tmp_path)


def workload(kind: str, name: str, image: str, **spec: Any) -> dict[str, Any]:
    """A DaemonSet or Deployment of one container, selecting `app: <name>`."""
    pod_spec = spec.pop("pod_spec", {})
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image}], **pod_spec},
            },
            **spec,
        },
    }


def daemonset(image: str = "busybox:1", **pod_spec: Any) -> dict[str, Any]:
    return workload("DaemonSet", "daemon", image, pod_spec=pod_spec)


def deployment(replicas: int, image: str = "busybox:1") -> dict[str, Any]:
    return workload("Deployment", "web", image, replicas=replicas)


async def apply(kubectl: Kubectl, tmp_path: Path, body: dict[str, Any]) -> None:
    path = tmp_path / f"{body['metadata']['name']}.yaml"
    path.write_text(yaml.safe_dump(body))
    await kubectl("apply", "-f", str(path))


async def pods(kubectl: Kubectl, selector: str) -> list[dict[str, Any]]:
    listed = json.loads(await kubectl("get", "pods", "-l", selector, "-o", "json"))
    return list(listed["items"])


async def running_on(kubectl: Kubectl, selector: str) -> dict[str, str]:
    """Node -> image of the Running pods the selector matches."""
    return {
        p["spec"]["nodeName"]: p["spec"]["containers"][0]["image"]
        for p in await pods(kubectl, selector)
        if p.get("status", {}).get("phase") == "Running"
    }


async def test_daemonset_runs_one_pod_per_fitting_node_and_rolls_out(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    await kubectl("label", "node", "node-1", "zone=far")
    await kubectl("taint", "node", "node-2", "dedicated=other:NoSchedule")
    linux = {"kubernetes.io/os": "linux"}
    await apply(kubectl, tmp_path, daemonset(nodeSelector=linux))
    await kubectl("rollout", "status", "daemonset/daemon", "--timeout=10s")
    assert await running_on(kubectl, "app=daemon") == {"node-0": "busybox:1", "node-1": "busybox:1"}
    status = json.loads(await kubectl("get", "ds", "daemon", "-o", "json"))["status"]
    assert status["desiredNumberScheduled"] == status["numberReady"] == 2
    assert status["updatedNumberScheduled"] == status["numberAvailable"] == 2
    assert status["observedGeneration"] == 1

    # a toleration lets it onto the tainted node; a new image replaces every pod
    tolerations = [{"key": "dedicated", "operator": "Equal", "value": "other"}]
    await apply(
        kubectl, tmp_path, daemonset("busybox:2", tolerations=tolerations, nodeSelector=linux)
    )
    await kubectl("rollout", "status", "daemonset/daemon", "--timeout=10s")
    expected = dict.fromkeys(("node-0", "node-1", "node-2"), "busybox:2")
    assert await eventually(
        lambda: _equal(running_on(kubectl, "app=daemon"), expected), "new pods on every node"
    )

    # a deleted pod comes back on its node; deleting the DaemonSet collects its pods
    victim = next(p for p in await pods(kubectl, "app=daemon") if p["spec"]["nodeName"] == "node-0")
    await kubectl("delete", "pod", victim["metadata"]["name"])
    await eventually(lambda: _equal(running_on(kubectl, "app=daemon"), expected), "pod replaced")
    await kubectl("delete", "daemonset", "daemon")
    await eventually(lambda: _none_left(kubectl, "app=daemon"), "daemon pods collected")


async def _equal(found: Any, expected: Any) -> bool:
    return bool(await found == expected)


async def _none_left(kubectl: Kubectl, selector: str) -> bool:
    return not await pods(kubectl, selector)


async def test_deployment_rolls_out_through_replicasets(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    await apply(kubectl, tmp_path, deployment(3))
    await kubectl("rollout", "status", "deployment/web", "--timeout=10s")
    first = json.loads(await kubectl("get", "deployment", "web", "-o", "json"))
    assert first["status"]["readyReplicas"] == first["status"]["availableReplicas"] == 3
    conditions = {c["type"]: c for c in first["status"]["conditions"]}
    assert conditions["Progressing"]["reason"] == "NewReplicaSetAvailable"
    assert conditions["Available"]["status"] == "True"

    await kubectl("set", "image", "deployment/web", "main=busybox:2")
    await kubectl("rollout", "status", "deployment/web", "--timeout=10s")
    replicasets = json.loads(await kubectl("get", "rs", "-l", "app=web", "-o", "json"))["items"]
    sizes = {
        rs["spec"]["template"]["spec"]["containers"][0]["image"]: rs["spec"]["replicas"]
        for rs in replicasets
    }
    assert sizes == {"busybox:1": 0, "busybox:2": 3}
    assert {p["spec"]["containers"][0]["image"] for p in await pods(kubectl, "app=web")} == {
        "busybox:2"
    }
    history = await kubectl("rollout", "history", "deployment/web")
    assert [line.split()[0] for line in history.splitlines()[2:] if line] == ["1", "2"]

    await kubectl("scale", "deployment/web", "--replicas=1")
    await kubectl("rollout", "status", "deployment/web", "--timeout=10s")
    await eventually(lambda: _count(kubectl, "app=web", 1), "scaled down to one pod")
    await kubectl("delete", "deployment", "web")
    await eventually(lambda: _none_left(kubectl, "app=web"), "pods collected with the deployment")


async def _count(kubectl: Kubectl, selector: str, wanted: int) -> bool:
    return len(await pods(kubectl, selector)) == wanted


async def test_workload_whose_selector_misses_its_template_is_refused(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    body = deployment(1)
    body["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(body))
    refused = await kubectl("apply", "-f", str(path), ok=False)
    assert 'The Deployment "web" is invalid' in refused
    assert 'Invalid value: map[string]string{"app":"web"}' in refused
    assert "`selector` does not match template `labels`" in refused


async def test_pod_log_is_read_only_and_names_its_container(
    cluster: Cluster, kubectl: Kubectl, tmp_path: Path
) -> None:
    two = {"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]}
    await apply(
        kubectl,
        tmp_path,
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": two},
    )
    refused = await kubectl("get", "--raw", "/api/v1/namespaces/default/pods/p/log", ok=False)
    assert "a container name must be specified for pod p, choose one of: [a b]" in refused
    assert await kubectl("logs", "p", "-c", "b") == ""  # no process: nothing written
    path = tmp_path / "pod.json"
    path.write_text(await kubectl("get", "pod", "p", "-o", "json"))
    replaced = await kubectl(
        "replace", "--raw", "/api/v1/namespaces/default/pods/p/log", "-f", str(path), ok=False
    )
    assert "MethodNotAllowed" in replaced or "not allow" in replaced
