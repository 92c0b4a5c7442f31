"""The scheduler's decisions as a user sees them: why a pod waits, and where replicas go.

Issue 27: the simulator's scheduler ignored a node's cpu, memory and pods allocatable, said
nothing on the pod about why it waited, and put both replicas of a Deployment on one node.
These cases run on the simulator's cluster (two nodes, its scheduler and workload controllers)
or, with AKRI_CONFORMANCE_KUBECONFIG, on a real cluster with two nodes (../shared/k8s).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.kube.calls import call
from akri.sim.cluster import Cluster as SimCluster
from akri.sim.quantity import parse
from tests.conformance.support import FOREIGN_KUBECONFIG, Cluster, new_client
from tests.support import eventually

NODES = ("node-a", "node-b")


@pytest.fixture
async def nodes_api(socket_dir: Path) -> AsyncIterator[client.ApiClient]:
    """A client of a cluster with two schedulable nodes."""
    if FOREIGN_KUBECONFIG:
        async with await new_client(Cluster(Path(FOREIGN_KUBECONFIG), None)) as api:
            yield api
        return
    async with (
        SimCluster(NODES, workdir=socket_dir / "sim") as sim,
        await new_client(Cluster(sim.kubeconfig, sim.server)) as api,
    ):
        yield api


@pytest.fixture
async def space(nodes_api: client.ApiClient) -> AsyncIterator[str]:
    core = client.CoreV1Api(nodes_api)
    name = f"conf-{uuid.uuid4().hex[:8]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))

    async def ready() -> bool:
        listed = await call(core.list_node)
        return sum(_ready(node) for node in listed["items"]) >= len(NODES)

    await eventually(ready, "two Ready nodes", 60)
    yield name
    await core.delete_namespace(name)


def _ready(node: dict[str, Any]) -> bool:
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


async def test_a_pod_no_node_has_room_for_says_why_on_the_pod_and_in_an_event(
    nodes_api: client.ApiClient, space: str
) -> None:
    core = client.CoreV1Api(nodes_api)
    listed = await call(core.list_node)
    most = max(parse(node["status"]["allocatable"]["cpu"]) for node in listed["items"])
    container = client.V1Container(
        name="c",
        image="busybox",
        resources=client.V1ResourceRequirements(requests={"cpu": str(int(most) * 2 + 1)}),
    )
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="big"), spec=client.V1PodSpec(containers=[container])
    )
    await core.create_namespaced_pod(space, pod)
    total = len(listed["items"])
    expected = (
        f"0/{total} nodes are available: {total} Insufficient cpu. no new claims to "
        f"deallocate, preemption: 0/{total} nodes are available: {total} Preemption is not "
        "helpful for scheduling."
    )

    async def unschedulable() -> dict[str, Any] | None:
        read = await call(core.read_namespaced_pod, "big", space)
        conditions = (read.get("status") or {}).get("conditions") or []
        found = [c for c in conditions if c["type"] == "PodScheduled"]
        return found[0] if found and found[0]["status"] == "False" else None

    condition = await eventually(unschedulable, "the PodScheduled condition", 60)
    assert (condition["reason"], condition["message"]) == ("Unschedulable", expected)

    async def event() -> dict[str, Any] | None:
        events = await call(core.list_namespaced_event, space)
        found = [e for e in events["items"] if e["reason"] == "FailedScheduling"]
        return found[0] if found else None

    failed = await eventually(event, "the FailedScheduling Event", 60)
    assert (failed["type"], failed["message"]) == ("Warning", expected)
    assert failed["involvedObject"]["name"] == "big"


async def test_the_replicas_of_a_deployment_are_spread_over_the_nodes(
    nodes_api: client.ApiClient, space: str
) -> None:
    labels = {"app": "spread"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="spread"),
        spec=client.V1DeploymentSpec(
            replicas=2,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")]),
            ),
        ),
    )
    await client.AppsV1Api(nodes_api).create_namespaced_deployment(space, deployment)
    core = client.CoreV1Api(nodes_api)

    async def placed() -> list[str] | None:
        pods = await call(core.list_namespaced_pod, space, label_selector="app=spread")
        nodes = [str((p.get("spec") or {}).get("nodeName") or "") for p in pods["items"]]
        return sorted(nodes) if len(nodes) == 2 and all(nodes) else None

    nodes = await eventually(placed, "both replicas scheduled", 60)
    assert len(set(nodes)) == 2, nodes
