"""The simulated cluster end to end: device plugin → Node capacity → scheduler → kubelet."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.sim.cluster import Cluster, node_names
from akri.sim.kubelet.objects import ALLOCATIONS_ANNOTATION
from tests.kubelet.plugin import FakePlugin, device
from tests.support import eventually

RESOURCE = "example.com/widget"


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(["node-0", "node-1"], workdir=socket_dir) as running:
        yield running


@pytest.fixture
async def widgets_on_node_1(cluster: Cluster) -> AsyncIterator[FakePlugin]:
    """Two widgets, only on node-1."""
    node = cluster.nodes["node-1"]
    plugin = FakePlugin(node.device_plugins_dir, RESOURCE, [device("w0"), device("w1")])
    await plugin.start(node.kubelet.socket)
    yield plugin
    await plugin.stop()


def pod(name: str, widgets: int | str) -> client.V1Pod:
    resources = client.V1ResourceRequirements(limits={RESOURCE: str(widgets)})
    container = client.V1Container(name="app", image="busybox", resources=resources)
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name), spec=client.V1PodSpec(containers=[container])
    )


async def phase(core: client.CoreV1Api, name: str) -> str | None:
    found: client.V1Pod = await core.read_namespaced_pod(name, "default")
    return found.status.phase if found.status else None


async def events_of(core: client.CoreV1Api, name: str) -> list[Any]:
    events = await core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name}"
    )
    return list(events.items)


@pytest.mark.usefixtures("widgets_on_node_1")
async def test_pod_is_scheduled_where_its_devices_are_and_admitted(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api_client())

    async def allocatable() -> bool:
        node = await core.read_node("node-1")
        return bool(node.status and (node.status.allocatable or {}).get(RESOURCE) == "2")

    await eventually(allocatable, "node-1 to publish its widgets")
    await core.create_namespaced_pod("default", pod("fits", 2))
    await eventually(lambda: _is(phase(core, "fits"), "Running"), "the pod to run")

    placed = await core.read_namespaced_pod("fits", "default")
    assert placed.spec.node_name == "node-1"
    allocations = json.loads(placed.metadata.annotations[ALLOCATIONS_ANNOTATION])
    assert sorted(allocations["app"][RESOURCE]["ids"]) == ["w0", "w1"]
    reasons = [e.reason for e in await events_of(core, "fits")]
    assert "Scheduled" in reasons


@pytest.mark.usefixtures("widgets_on_node_1")
async def test_pod_that_fits_nowhere_stays_pending_with_a_reason(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api_client())
    await core.create_namespaced_pod("default", pod("too-big", 3))

    expected = (
        "0/2 nodes are available: 2 Insufficient example.com/widget. no new claims to "
        "deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for "
        "scheduling."
    )

    async def failed_scheduling() -> bool:
        # A node still starting adds "1 node(s) were not ready" to an earlier attempt's reason.
        events = await events_of(core, "too-big")
        return expected in [e.message for e in events if e.reason == "FailedScheduling"]

    await eventually(failed_scheduling, "the FailedScheduling event")
    assert await phase(core, "too-big") == "Pending"
    assert (await core.read_namespaced_pod("too-big", "default")).spec.node_name is None


@pytest.mark.usefixtures("widgets_on_node_1")
async def test_second_pod_waits_until_the_first_frees_the_devices(cluster: Cluster) -> None:
    core = client.CoreV1Api(cluster.api_client())
    await core.create_namespaced_pod("default", pod("first", 2))
    await eventually(lambda: _is(phase(core, "first"), "Running"), "the first pod to run")
    await core.create_namespaced_pod("default", pod("second", 1))
    await eventually(lambda: _has_failed_scheduling(core, "second"), "the second pod to wait")

    await core.delete_namespaced_pod("first", "default")
    await eventually(lambda: _is(phase(core, "second"), "Running"), "the second pod to run")


@pytest.mark.usefixtures("widgets_on_node_1")
async def test_bad_pods_stop_neither_the_scheduler_nor_the_node(cluster: Cluster) -> None:
    """Issue 16: one pod with `limits: {widget: "abc"}` used to stop the scheduler for good."""
    core = client.CoreV1Api(cluster.api_client())
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_pod("default", pod("abc", "abc"))
    assert refused.value.status == 400
    # The emulator, like the API server, does not check every field: these get through.
    odd = {"name": "app", "image": "busybox", "resources": "none"}
    for name, node in (("unreadable", None), ("unreadable-bound", "node-1")):
        body: Any = {"metadata": {"name": name}, "spec": {"containers": [odd], "nodeName": node}}
        await core.create_namespaced_pod("default", body)

    await core.create_namespaced_pod("default", pod("after", 1))

    await eventually(lambda: _is(phase(core, "after"), "Running"), "a later pod to run")
    assert await phase(core, "unreadable") == "Pending"


def test_node_names() -> None:
    assert node_names("3") == ["node-0", "node-1", "node-2"]
    assert node_names("edge-a, edge-b") == ["edge-a", "edge-b"]
    with pytest.raises(ValueError, match="distinct"):
        node_names("a,a")
    with pytest.raises(ValueError, match="count or distinct"):
        node_names(",")


async def _is(value: Any, expected: str) -> bool:
    return bool(await value == expected)


async def _has_failed_scheduling(core: client.CoreV1Api, name: str) -> bool:
    return any(e.reason == "FailedScheduling" for e in await events_of(core, name))
