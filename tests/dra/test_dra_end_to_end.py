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
from akri.dra.devices import instance_selector
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from tests.sim.users import User
from tests.support import eventually, selected_nodes

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
    return len(devices) >= 2 and all(len(selected_nodes(d)) == 2 for d in devices)


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


def instance_claim(name: str, instance: str) -> dict[str, Any]:
    selector = {"cel": {"expression": instance_selector(instance)}}
    request = {
        "name": "dev",
        "exactly": {"deviceClassName": "cfg.akri.sh", "selectors": [selector]},
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [request]}},
    }


def claim_pod(name: str, node: str | None, claim: str, *, template: bool = False) -> dict[str, Any]:
    """A pod whose container uses the claim `claim`, or one made from the template `claim`."""
    container = {"name": "app", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}
    source = "resourceClaimTemplateName" if template else "resourceClaimName"
    spec: dict[str, Any] = {
        "containers": [container],
        "resourceClaims": [{"name": "dev", source: claim}],
    }
    if node is not None:
        spec["nodeSelector"] = {"kubernetes.io/hostname": node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


async def test_worked_example_with_a_per_instance_claim(cluster: Cluster) -> None:
    """docs/design.md §5.4 in DRA mode: P1 takes one slot of A and of B through
    `akri.sh/cfg: 2`; P2 takes A's other slot through a claim selecting A's `instance`
    attribute; then A is full for another such claim, and three distinct devices never fit."""
    user = User(cluster)
    api = client.CustomObjectsApi(cluster.api_client())
    await user.apply(configuration(unique=True))
    await eventually(lambda: published(cluster), "both devices published for both nodes")
    await user.run(
        {
            **pod("p1", 2),
            "spec": {**pod("p1", 2)["spec"], "nodeSelector": {"kubernetes.io/hostname": "n"}},
        }
    )
    await user.wait_running("p1")

    a = naming.instance_name(CFG, "foo0")
    for name in ("claim-a", "claim-a2"):
        await api.create_namespaced_custom_object(
            GROUP, VERSION, "default", "resourceclaims", instance_claim(name, a)
        )
    await user.run(claim_pod("p2", "m", "claim-a"))
    await user.wait_running("p2")
    claim = await api.get_namespaced_custom_object(
        GROUP, VERSION, "default", "resourceclaims", "claim-a"
    )
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    assert result["device"] == a
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["p2"]

    await user.run(claim_pod("p3", "n", "claim-a2"))  # A has no slot left
    await eventually(lambda: _has(user, "p3", "cannot allocate all claims"), "p3 unschedulable")
    await user.run(pod("p4", 3))  # three distinct devices never fit
    await eventually(lambda: _has(user, "p4", "cannot allocate all claims"), "p4 unschedulable")
    assert await user.phase("p3") == "Pending"

    # P2 goes: its reservation is dropped, claim-a deallocated, and p3 gets A's slot.
    await user.core.delete_namespaced_pod("p2", "default")
    await user.wait_running("p3")
    released = await api.get_namespaced_custom_object(
        GROUP, VERSION, "default", "resourceclaims", "claim-a"
    )
    assert "allocation" not in released.get("status", {})


async def pod_claim(user: User, pod: str) -> str | None:
    found = await user.core.read_namespaced_pod(pod, "default")
    statuses = found.status.resource_claim_statuses or []
    return next((s.resource_claim_name for s in statuses if s.name == "dev"), None)


async def test_a_per_instance_template_gives_each_pod_a_slot_of_that_instance(
    cluster: Cluster,
) -> None:
    """The Instance's ResourceClaimTemplate, made by the controller (one slot of the Instance):
    each pod naming it gets a claim
    of its own, made from the template, owned by the pod; capacity 2 admits two such pods, the
    third waits with the scheduler's reason, and runs when one goes, whose claim goes with it."""
    user = User(cluster)
    api = client.CustomObjectsApi(cluster.api_client())
    await user.apply(configuration(unique=True))
    await eventually(lambda: published(cluster), "both devices published for both nodes")
    a = naming.instance_name(CFG, "foo0")

    async def template_made() -> bool:  # by the controller, for every Instance
        found = await api.list_namespaced_custom_object(
            GROUP, VERSION, "default", "resourceclaimtemplates"
        )
        return a in {t["metadata"]["name"] for t in found["items"]}

    await eventually(template_made, "the Instance's ResourceClaimTemplate")
    for name in ("p1", "p2"):
        await user.run(claim_pod(name, None, a, template=True))
        await user.wait_running(name)
    made = [await pod_claim(user, name) for name in ("p1", "p2")]
    for name, claim_name in zip(("p1", "p2"), made, strict=True):
        assert claim_name is not None
        assert claim_name.startswith(f"{name}-dev-")
        claim = await api.get_namespaced_custom_object(
            GROUP, VERSION, "default", "resourceclaims", claim_name
        )
        assert claim["metadata"]["ownerReferences"][0]["name"] == name
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["device"] == a

    await user.run(claim_pod("p3", None, a, template=True))
    await eventually(lambda: _has(user, "p3", "cannot allocate all claims"), "p3 unschedulable")
    assert await user.phase("p3") == "Pending"

    await user.core.delete_namespaced_pod("p1", "default")
    await user.wait_running("p3")

    async def p1_claim_gone() -> bool:
        names = {c["metadata"]["name"] for c in await claims(cluster)}
        return made[0] not in names

    await eventually(p1_claim_gone, "p1's claim deleted with p1")
