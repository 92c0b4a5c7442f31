"""A node that is gone gives up everything: out of every Instance's nodes, its slots freed."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.sim.cluster import Cluster
from tests.controller.conftest import (
    configuration_body,
    create_configuration,
    create_instance,
    events,
    patch,
    read_instance,
    running,
)
from tests.support import eventually

CAPACITY = 3


async def hold(api: client.ApiClient, name: str, usage: dict[str, str]) -> None:
    """Slots held as agents would hold them (a guarded write is not needed: nobody races)."""
    await patch(api, "instances", name, {"spec": {"deviceUsage": usage}})


async def test_node_not_ready_past_grace_is_scrubbed(cluster: Cluster) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(api, configuration_body("cam", capacity=CAPACITY))
    both = await create_instance(api, configuration, "dev0", ["node-0", "node-1"])
    alone = await create_instance(api, configuration, "dev1", ["node-1"])
    both_name, alone_name = both.metadata.name or "", alone.metadata.name or ""
    await hold(
        api,
        both_name,
        {
            naming.slot_id(both_name, 0): "node-0",
            naming.slot_id(both_name, 1): "node-1",
            naming.slot_id(both_name, 2): "C:cam-0:node-1",
        },
    )
    await hold(api, alone_name, {naming.slot_id(alone_name, 0): "node-1"})

    async with running(api) as controller:
        await eventually(lambda: controller.ready, "the controller to sync")
        await cluster.nodes["node-1"].kubelet.stop()

        async def scrubbed() -> dict[str, Any] | None:
            found = await read_instance(api, both_name)
            return found if found and found["spec"]["nodes"] == ["node-0"] else None

        kept = await eventually(scrubbed, "node-1 to leave the shared Instance")
        assert kept["spec"]["deviceUsage"] == {
            naming.slot_id(both_name, 0): "node-0",
            naming.slot_id(both_name, 1): "",
            naming.slot_id(both_name, 2): "",
        }
        await eventually(
            lambda: _gone(api, alone_name), "the Instance only node-1 saw to be deleted"
        )
        reasons = {e.reason for e in await events(api, both_name)}
        assert "NodeLost" in reasons


async def test_ready_node_within_grace_keeps_everything(cluster: Cluster) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(api, configuration_body("cam"))
    instance = await create_instance(api, configuration, "dev0", ["node-0", "node-1"])
    name = instance.metadata.name or ""
    slow = Tuning(node_grace=300.0)

    async with running(api, slow) as controller:
        await eventually(lambda: controller.ready, "the controller to sync")
        await cluster.nodes["node-1"].kubelet.stop()
        await eventually(
            lambda: controller.nodes.lost_in("node-1") is not None, "node-1 to be seen not Ready"
        )
        found = await read_instance(api, name)
        assert found is not None
        assert found["spec"]["nodes"] == ["node-0", "node-1"]


async def test_deleted_node_is_scrubbed_without_grace(api: client.ApiClient) -> None:
    configuration = await create_configuration(api, configuration_body("cam"))
    await client.CoreV1Api(api).create_node(
        client.V1Node(metadata=client.V1ObjectMeta(name="node-0"))
    )
    instance = await create_instance(api, configuration, "dev0", ["node-0", "vanished"])
    name = instance.metadata.name or ""
    await hold(api, name, {naming.slot_id(name, 0): "vanished"})
    await report_offline(api, name, ["node-0", "vanished"])

    async with running(api, Tuning(node_grace=300.0)):

        async def scrubbed() -> dict[str, Any] | None:
            found = await read_instance(api, name)
            rows = [r["node"] for r in (found or {}).get("status", {}).get("nodes", [])]
            return (
                found
                if found and found["spec"]["nodes"] == ["node-0"] and rows == ["node-0"]
                else None
            )

        kept = await eventually(scrubbed, "the deleted node to leave the Instance")
        assert set(kept["spec"]["deviceUsage"].values()) == {""}
    (offline,) = kept["status"]["conditions"]
    assert (offline["type"], offline["status"]) == ("DeviceOffline", "True")
    assert offline["message"] == "node node-0: device offline"


async def report_offline(api: client.ApiClient, name: str, nodes: list[str]) -> None:
    """Rows of DeviceOffline for `nodes`, as their agents would write them."""
    custom = client.CustomObjectsApi(api)
    found = await read_instance(api, name)
    assert found is not None
    problems = [{"type": "DeviceOffline", "message": "device offline"}]
    message = "; ".join(f"node {node}: device offline" for node in nodes)
    found["status"] = {
        "nodes": [{"node": node, "problems": problems} for node in nodes],
        "conditions": [
            {
                "type": "DeviceOffline",
                "status": "True",
                "reason": "DeviceOffline",
                "message": message,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    }
    await custom.replace_namespaced_custom_object_status(
        naming.GROUP, naming.VERSION, "default", "instances", name, found
    )


async def _gone(api: client.ApiClient, name: str) -> bool:
    return await read_instance(api, name) is None


async def test_slots_other_nodes_hold_keep_the_instance_of_a_lost_node(
    api: client.ApiClient,
) -> None:
    """docs/design.md §5.5: node-0's device is offline, but its container still uses a slot."""
    configuration = await create_configuration(api, configuration_body("cam", capacity=2))
    await client.CoreV1Api(api).create_node(
        client.V1Node(metadata=client.V1ObjectMeta(name="node-0"))
    )
    kept = await create_instance(api, configuration, "dev0", ["vanished"])
    freed = await create_instance(api, configuration, "dev1", ["vanished"])
    kept_name, freed_name = kept.metadata.name or "", freed.metadata.name or ""
    protected = {"metadata": {"finalizers": [naming.SLOTS_FINALIZER]}}
    await hold(api, kept_name, {naming.slot_id(kept_name, 0): "vanished"})
    await hold(api, kept_name, {naming.slot_id(kept_name, 1): "C:cam-0:node-0"})
    await hold(api, freed_name, {naming.slot_id(freed_name, 0): "vanished"})
    for name in (kept_name, freed_name):
        await patch(api, "instances", name, protected)

    async with running(api, Tuning(node_grace=300.0)):
        await eventually(lambda: _gone(api, freed_name), "the Instance only the lost node used")

        async def scrubbed() -> dict[str, Any] | None:
            found = await read_instance(api, kept_name)
            return found if found and found["spec"]["nodes"] == [] else None

        found = await eventually(scrubbed, "the lost node to leave the other Instance")
        assert found["spec"]["deviceUsage"] == {
            naming.slot_id(kept_name, 0): "",
            naming.slot_id(kept_name, 1): "C:cam-0:node-0",
        }
        assert found["metadata"]["finalizers"] == [naming.SLOTS_FINALIZER]
