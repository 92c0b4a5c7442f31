"""Offline devices in DRA mode (docs/design.md §8a): a shared device a node stops discovering
leaves that node's selection at once; when every node has lost it, it stays published but
tainted NoSchedule, so no new claim gets it while the pod using it runs on; back on both nodes,
it is offered as before. (Past the grace the nodes leave `nodes` and the device the slices:
tests/dra/test_dra_lost_slots.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.dra.devices import OFFLINE_TAINT
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from akri.sim.manifests import debug_echo_configuration, pod
from tests.dra.test_dra_end_to_end import GROUP, VERSION, _has, claims
from tests.sim.users import User
from tests.support import eventually, selected_nodes

CFG = "cfg"
DEVICE = naming.instance_name(CFG, "foo0")
LONG_GRACE = {"offline_grace": 600}
"""Long enough that no node leaves `nodes` during the test, however slow the machine."""


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["m", "n"],
        workdir=socket_dir,
        agents=True,
        agent_options=LONG_GRACE,
        controller=Tuning(),
        mode=Mode.DRA,
    ) as running:
        yield running


async def device(cluster: Cluster) -> dict[str, Any] | None:
    api = client.CustomObjectsApi(cluster.api_client())
    slices = (await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices"))["items"]
    return next((d for s in slices for d in s["spec"]["devices"] if d["name"] == DEVICE), None)


def published_as(cluster: Cluster, nodes: list[str], tainted: bool) -> Any:
    async def probe() -> bool:
        found = await device(cluster)
        if found is None:
            return False
        selected = selected_nodes(found)
        taints = [(t["key"], t["effect"]) for t in found.get("taints") or []]
        return sorted(selected) == nodes and taints == (
            [(OFFLINE_TAINT, "NoSchedule")] if tainted else []
        )

    return probe


async def test_offline_device_leaves_its_node_then_is_tainted_and_pods_run_on(
    cluster: Cluster,
) -> None:
    user = User(cluster)
    await user.apply(debug_echo_configuration(CFG, ["foo0"], 3))
    await eventually(published_as(cluster, ["m", "n"], False), "the device offered to both")
    await user.run(pod("holder", "n", CFG, 1))
    await user.wait_running("holder")

    cluster.nodes["n"].debug_echo.set_offline(["foo0"])
    await eventually(published_as(cluster, ["m"], False), "n out of the device's selection")
    await user.run(pod("on-n", "n", CFG, 1))
    await eventually(lambda: _has(user, "on-n", "cannot allocate all claims"), "on-n waits")

    cluster.nodes["m"].debug_echo.set_offline(["foo0"])
    await eventually(published_as(cluster, ["m", "n"], True), "the device tainted")
    await user.run(pod("on-m", "m", CFG, 1))
    await eventually(lambda: _has(user, "on-m", "cannot allocate all claims"), "on-m waits")
    instance = await user.instance(DEVICE)
    assert instance is not None
    assert sorted(instance["spec"]["nodes"]) == ["m", "n"]
    assert await user.phase("holder") == "Running"  # NoSchedule evicts nothing
    held = [c for c in await claims(cluster) if (c.get("status") or {}).get("allocation")]
    assert [r["device"] for c in held for r in c["status"]["allocation"]["devices"]["results"]] == [
        DEVICE
    ]
    assert await user.phase("on-n") == await user.phase("on-m") == "Pending"

    for node in ("m", "n"):
        cluster.nodes[node].debug_echo.set_offline()
    await eventually(published_as(cluster, ["m", "n"], False), "the device offered again")
    await user.wait_running("on-n")
    await user.wait_running("on-m")
