"""DRA mode end to end on the simulated cluster: real agents and controller publish, the
scheduler allocates claims for pods that ask `akri.sh/<configuration>: N` as before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from tests.sim.users import User
from tests.support import eventually

CFG = "cfg"
GROUP, VERSION = "resource.k8s.io", "v1"


def configuration(unique: bool) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": CFG, "namespace": "default"},
        "spec": {
            "discoveryHandler": {
                "name": "debugEcho",
                "discoveryDetails": "descriptions: [foo0, foo1]",
            },
            "capacity": 2,
            "uniqueDevices": unique,
        },
    }


def pod(name: str, count: int) -> dict[str, Any]:
    limits = {naming.resource_name(CFG): str(count)}
    container = {"name": "app", "image": "busybox", "resources": {"limits": limits}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["n", "m"], workdir=socket_dir, agents=True, controller=Tuning(), mode=Mode.DRA
    ) as running:
        yield running


async def claims(cluster: Cluster) -> list[dict[str, Any]]:
    api = client.CustomObjectsApi(cluster.api_client())
    found = await api.list_namespaced_custom_object(GROUP, VERSION, "default", "resourceclaims")
    return list(found["items"])


async def published(cluster: Cluster) -> bool:
    api = client.CustomObjectsApi(cluster.api_client())
    slices = (await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices"))["items"]
    devices = [d for s in slices for d in s["spec"]["devices"]]
    return len(devices) >= 2 and all(
        len(d["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"]) == 2
        for d in devices
    )


@pytest.mark.parametrize(("unique", "fits"), [(True, 2), (False, 2)])
async def test_capacity_shared_by_two_nodes_is_never_exceeded(
    cluster: Cluster, unique: bool, fits: int
) -> None:
    """Two devices of capacity 2 seen by both nodes: two pods asking 2 run, a third waits
    with the scheduler's reason, and runs once one of the first two is gone."""
    user = User(cluster)
    await user.apply(configuration(unique))
    await eventually(lambda: published(cluster), "both devices published for both nodes")
    for name in ("p1", "p2"):
        await user.run(pod(name, 2))
        await user.wait_running(name)
    held = await claims(cluster)
    assert len(held) == fits
    slots: dict[str, int] = {}
    for claim in held:
        assert (
            claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"]
            == "true"
        )
        results = claim["status"]["allocation"]["devices"]["results"]
        assert len(results) == 2
        if unique:  # two distinct devices per pod
            assert len({r["device"] for r in results}) == 2
        for result in results:
            slots[result["device"]] = slots.get(result["device"], 0) + 1
    assert all(count <= (2 if unique else 1) for count in slots.values())

    await user.run(pod("p3", 1))
    await eventually(lambda: _has(user, "p3", "cannot allocate all claims"), "p3 unschedulable")
    assert await user.phase("p3") == "Pending"

    await user.core.delete_namespaced_pod("p1", "default")
    await user.wait_running("p3")


async def _has(user: User, name: str, text: str) -> bool:
    events = await user.core.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={name}"
    )
    return any(text in (e.message or "") for e in events.items)
