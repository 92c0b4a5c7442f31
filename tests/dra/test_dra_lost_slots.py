"""Issue 12's over-commit in DRA mode: a device offline past the grace on the node whose pod
uses it, then back. In DRA the ResourceClaim is the record (docs/design.md §8a): the node
leaves the device's node selection, but the claim stays allocated, so a second pod on a
capacity-1 device is never scheduled while the first one runs, through the Configuration's
extended resource as through a claim for the one Instance.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from akri.sim.manifests import pod
from tests.dra.test_dra_end_to_end import GROUP, VERSION, claim_pod, instance_claim
from tests.sim.test_lost_slots import CFG, DEVICE, FAST, configuration, nodes_are
from tests.sim.users import User
from tests.support import eventually


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
    return len(devices) == 1 and sorted(
        devices[0]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"]
    ) == sorted(nodes)


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
