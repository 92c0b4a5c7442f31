"""DRA mode publishing on the simulated cluster: DeviceClasses and ResourceSlices written by the
real controller (shared devices) and the real agents (local devices), read back from the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from tests.sim.users import User
from tests.support import eventually, selected_nodes

CFG = "cfg"
A = naming.instance_name(CFG, "foo0")
B = naming.instance_name(CFG, "foo1")
GROUP, VERSION = "resource.k8s.io", "v1"


def configuration(unique: bool = True) -> dict[str, Any]:
    details = "descriptions: [foo0, foo1]"
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": CFG, "namespace": "default"},
        "spec": {
            "discoveryHandler": {"name": "debugEcho", "discoveryDetails": details},
            "capacity": 2,
            "uniqueDevices": unique,
            "brokerProperties": {"MODE": "test", "bad-name": "x"},
        },
    }


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["n", "m"],
        workdir=socket_dir,
        agents=True,
        controller=Tuning(),
        mode=Mode.DRA,
        agent_options={"offline_grace": 0.2},
    ) as running:
        yield running


async def slices(cluster: Cluster) -> list[dict[str, Any]]:
    api = client.CustomObjectsApi(cluster.api_client())
    found = await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices")
    return list(found["items"])


async def devices_by_pool(cluster: Cluster) -> dict[str, dict[str, dict[str, Any]]]:
    pools: dict[str, dict[str, dict[str, Any]]] = {}
    for item in await slices(cluster):
        pool = pools.setdefault(item["spec"]["pool"]["name"], {})
        pool.update({d["name"]: d for d in item["spec"]["devices"]})
    return pools


async def test_shared_devices_are_published_once_with_their_nodes(cluster: Cluster) -> None:
    user = User(cluster)
    await user.apply(configuration())

    async def both_nodes() -> dict[str, Any] | None:
        pool = (await devices_by_pool(cluster)).get(f"{CFG}/shared", {})
        nodes = [selected_nodes(d) for d in pool.values()]
        return pool if nodes == [["m", "n"], ["m", "n"]] else None

    pool = await eventually(both_nodes, "both devices visible from both nodes")
    assert set(pool) == {A, B}
    attributes = pool[A]["attributes"]
    assert attributes["configuration"] == {"string": CFG}
    assert attributes["instance"] == {"string": A}
    assert attributes["handler"] == {"string": "debugEcho"}
    assert attributes["MODE"] == {"string": "test"}
    assert "bad-name" not in attributes
    assert pool[A]["capacity"]["slots"]["value"] == "2"
    (item,) = await slices(cluster)
    assert item["spec"]["perDeviceNodeSelection"] is True
    assert "nodeName" not in item["spec"]

    api = client.CustomObjectsApi(cluster.api_client())
    device_class = await api.get_cluster_custom_object(
        GROUP, VERSION, "deviceclasses", "cfg.akri.sh"
    )
    assert device_class["spec"]["extendedResourceName"] == "akri.sh/cfg"

    # One node loses foo0 past the offline grace: the device lists only the other node.
    cluster.nodes["n"].debug_echo_file.write_text("foo0\n")

    async def only_m() -> bool:
        pool = (await devices_by_pool(cluster)).get(f"{CFG}/shared", {})
        device = pool.get(A)
        if device is None:
            return False
        values = selected_nodes(device)
        return bool(values == ["m"])

    await eventually(only_m, "foo0 selected on m only")

    # Deleting the Configuration removes its DeviceClass and its slices.
    await api.delete_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "configurations", CFG
    )

    async def gone() -> bool:
        try:
            await api.get_cluster_custom_object(GROUP, VERSION, "deviceclasses", "cfg.akri.sh")
        except ApiException as error:
            return error.status == 404 and not await slices(cluster)
        return False

    await eventually(gone, "DeviceClass and slices removed")


async def test_local_devices_are_published_per_node(cluster: Cluster) -> None:
    for node in cluster.nodes.values():
        node.debug_echo.shared = False
    user = User(cluster)
    await user.apply(configuration(unique=False))

    async def per_node() -> dict[str, Any] | None:
        pools = await devices_by_pool(cluster)
        wanted = {f"{CFG}/node/n", f"{CFG}/node/m"}
        return pools if set(pools) == wanted and all(len(p) == 4 for p in pools.values()) else None

    pools = await eventually(per_node, "a local pool of 2 devices x 2 slots on each node")
    local_a = naming.instance_name(CFG, "foo0", "n")
    assert set(pools[f"{CFG}/node/n"]) == {
        f"{local_a}-0",
        f"{local_a}-1",
        *(f"{naming.instance_name(CFG, 'foo1', 'n')}-{i}" for i in range(2)),
    }
    for item in await slices(cluster):
        node = item["spec"]["nodeName"]
        assert item["metadata"]["ownerReferences"][0]["name"] == node
        assert item["spec"]["pool"]["name"] == f"{CFG}/node/{node}"

    # A device taken offline on n leaves n's pool; m's pool is untouched.
    before = {
        s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in await slices(cluster)
    }
    cluster.nodes["n"].debug_echo_file.write_text("foo0\n")

    async def shrunk() -> bool:
        return len((await devices_by_pool(cluster)).get(f"{CFG}/node/n", {})) == 2

    await eventually(shrunk, "foo0's slots gone from n's pool")
    after = {s["metadata"]["name"]: s["metadata"]["resourceVersion"] for s in await slices(cluster)}
    m_slices = [name for name in after if "node-m" in name]
    assert m_slices
    assert all(before[name] == after[name] for name in m_slices)
