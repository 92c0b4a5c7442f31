"""Issue 12's over-commit in DRA mode: a device offline past the grace on the node whose pod
uses it, then back. In DRA the ResourceClaim is the record (docs/design.md §8a): the node
leaves the device's node selection, but the claim stays allocated, so a second pod on a
capacity-1 device is never scheduled while the first one runs, through the Configuration's
extended resource as through a claim for the one Instance.

A capacity lowered under a claim on a slot past the new capacity, in DRA mode, with
`uniqueDevices: false` (one slot device per slot). The allocator counts only the devices a
slice offers, so offering slots 0 and 1 after capacity 3 -> 2 while slot 2 is allocated would
let two new claims take them: three containers on a capacity-2 device (the soak's
over-capacity, seed 1312586295). The held slot stays offered and one free slot is withheld
until releases bring the claims down to the capacity (docs/design.md §5.5).
"""

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
from akri.sim.manifests import pod
from akri.sim.soak.user import MERGE_PATCH
from tests.dra.test_dra_end_to_end import GROUP, VERSION, claim_pod, instance_claim
from tests.sim.test_lost_slots import CFG, DEVICE, FAST, configuration, nodes_are
from tests.sim.users import User
from tests.support import eventually, selected_nodes


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["node-a", "node-b"],
        workdir=socket_dir,
        agents=True,
        agent_options=FAST,
        controller=Tuning(),
        mode=Mode.DRA,
    ) as running:
        yield running


async def published_for(cluster: Cluster, nodes: list[str]) -> bool:
    """Whether the shared slice offers the device to exactly `nodes`."""
    api = client.CustomObjectsApi(cluster.api_client())
    slices = (await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices"))["items"]
    devices = [d for s in slices for d in s["spec"]["devices"] if d["name"] == DEVICE]
    if not nodes:
        return not devices
    return len(devices) == 1 and sorted(selected_nodes(devices[0])) == sorted(nodes)


async def make_claim(cluster: Cluster, name: str) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    await api.create_namespaced_custom_object(
        GROUP, VERSION, "default", "resourceclaims", instance_claim(name, DEVICE)
    )


def request(level: str, name: str, node: str) -> dict[str, Any]:
    """A pod on `node` asking for one slot: `akri.sh/cfg: 1`, or the claim `<name>-claim`
    selecting the Instance (the DRA form of an instance-level request)."""
    if level == "configuration":
        return pod(name, node, CFG, 1)
    return claim_pod(name, node, f"{name}-claim")


async def allocated(cluster: Cluster) -> list[str]:
    """The devices that allocated claims hold, one entry per allocation result."""
    api = client.CustomObjectsApi(cluster.api_client())
    claims = await api.list_namespaced_custom_object(GROUP, VERSION, "default", "resourceclaims")
    return sorted(
        result["device"]
        for claim in claims["items"]
        for result in (
            ((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
        ).get("results", [])
    )


async def start_holder(user: User, cluster: Cluster, level: str, nodes: list[str]) -> None:
    await user.apply(configuration(1))
    await eventually(lambda: published_for(cluster, nodes), f"{DEVICE} offered to {nodes}")
    if level == "instance":
        for name in ("holder", "intruder"):
            await make_claim(cluster, f"{name}-claim")
    await user.run(request(level, "holder", "node-a"))
    await user.wait_running("holder")
    assert await allocated(cluster) == [DEVICE]


async def refused_until_holder_ends(user: User, cluster: Cluster, level: str, node: str) -> None:
    """The intruder is unschedulable while the holder runs, and runs once it is gone: the
    refusal was for the holder's slot, not for anything else."""
    await user.run(request(level, "intruder", node))
    await user.wait_refused("intruder")
    assert await user.phase("intruder") == "Pending"
    assert await user.phase("holder") == "Running"
    assert await allocated(cluster) == [DEVICE]

    await user.core.delete_namespaced_pod("holder", "default")
    await user.wait_running("intruder")
    assert await allocated(cluster) == [DEVICE]


LEVELS = ("configuration", "instance")


@pytest.mark.parametrize("level", LEVELS)
async def test_a_claim_keeps_its_slot_while_the_device_is_offline_past_the_grace(
    cluster: Cluster, level: str
) -> None:
    user = User(cluster)
    await start_holder(user, cluster, level, ["node-a", "node-b"])

    cluster.nodes["node-a"].debug_echo.set_offline(["foo0"])
    await nodes_are(user, ["node-b"])
    await eventually(lambda: published_for(cluster, ["node-b"]), "node-a out of the selection")
    cluster.nodes["node-a"].debug_echo.set_offline()
    await nodes_are(user, ["node-a", "node-b"])
    await eventually(lambda: published_for(cluster, ["node-a", "node-b"]), "node-a back")

    await refused_until_holder_ends(user, cluster, level, "node-b")


async def test_a_claim_keeps_its_slot_while_no_node_sees_the_device(cluster: Cluster) -> None:
    """The only node seeing the device loses it: the device leaves the slices (its Instance
    goes), comes back under the same name, and the claim still holds its slot."""
    user = User(cluster)
    cluster.nodes["node-b"].debug_echo.set_offline(["foo0"])
    await start_holder(user, cluster, "configuration", ["node-a"])

    cluster.nodes["node-a"].debug_echo.set_offline(["foo0"])
    await eventually(lambda: published_for(cluster, []), f"{DEVICE} out of the slices")
    cluster.nodes["node-a"].debug_echo.set_offline()
    await eventually(lambda: published_for(cluster, ["node-a"]), f"{DEVICE} offered again")

    await refused_until_holder_ends(user, cluster, "configuration", "node-a")


def slot_configuration() -> dict[str, Any]:
    base = configuration(3)
    return {**base, "spec": {**base["spec"], "uniqueDevices": False}}


async def offered(cluster: Cluster, device: str) -> list[str]:
    """The slot devices of `device` the slices offer."""
    api = client.CustomObjectsApi(cluster.api_client())
    slices = (await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices"))["items"]
    return sorted(
        found["name"]
        for item in slices
        for found in item["spec"]["devices"]
        if found["name"].startswith(f"{device}-")
    )


async def holder_of(cluster: Cluster, slot: str) -> str:
    """The pod whose claim is allocated `slot`."""
    api = client.CustomObjectsApi(cluster.api_client())
    claims = await api.list_namespaced_custom_object(GROUP, VERSION, "default", "resourceclaims")
    for claim in claims["items"]:
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results", [])
        if any(result["device"] == slot for result in results):
            return str(status["reservedFor"][0]["name"])
    raise AssertionError(f"no claim holds {slot}")


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "local"])
async def test_no_claim_is_allocated_past_a_lowered_capacity(
    cluster: Cluster, shared: bool
) -> None:
    """The controller publishes the shared device from the claims it follows; node-a's agent
    publishes its local device from the claims prepared on node-a."""
    for node in cluster.nodes.values():
        node.debug_echo.shared = shared
    device = DEVICE if shared else naming.instance_name(CFG, "foo0", "node-a")
    slots = [naming.slot_id(device, i) for i in range(3)]
    newcomers = "node-b" if shared else "node-a"
    user = User(cluster)
    await user.apply(slot_configuration())

    async def all_offered() -> bool:
        return await offered(cluster, device) == slots

    await eventually(all_offered, "three slots offered")
    for k in range(3):
        await user.run(pod(f"p{k}", "node-a", CFG, 1))
    for k in range(3):
        await user.wait_running(f"p{k}")
    assert await allocated(cluster) == slots

    # Only the claim on slot 2 is left; then the capacity goes to 2 under it.
    last = await holder_of(cluster, slots[2])
    for k in range(3):
        if f"p{k}" != last:
            await user.core.delete_namespaced_pod(f"p{k}", "default")

    async def only_the_last() -> bool:
        return await allocated(cluster) == [slots[2]]

    await eventually(only_the_last, "slots 0 and 1 freed")
    await client.CustomObjectsApi(cluster.api_client()).patch_namespaced_custom_object(
        naming.GROUP,
        naming.VERSION,
        "default",
        "configurations",
        CFG,
        {"spec": {"capacity": 2}},
        **MERGE_PATCH,
    )

    async def lowered() -> bool:
        found = await user.instance(device)
        return found is not None and found["spec"]["capacity"] == 2

    await eventually(lowered, "capacity 2 on the Instance")

    async def held_and_one_free() -> bool:
        return await offered(cluster, device) == [slots[0], slots[2]]

    await eventually(held_and_one_free, "the held slot 2 and one free slot offered")

    # Two new pods on a device with one slot of room: one runs, the other waits.
    await user.run(pod("q0", newcomers, CFG, 1))
    await user.wait_running("q0")
    await user.run(pod("q1", newcomers, CFG, 1))
    await user.wait_refused("q1")
    assert await allocated(cluster) == [slots[0], slots[2]]

    # The last old pod ends: the device is within its capacity, the waiting pod runs. Its
    # claim may get slot 2 (offered until the publisher sees it free) or slot 1: two slots.
    await user.core.delete_namespaced_pod(last, "default")
    await user.wait_running("q1")
    held = await allocated(cluster)
    assert len(held) == 2
    assert slots[0] in held
