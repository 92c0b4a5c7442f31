"""A slot belongs to the container using it (docs/design.md §5.5), whatever happens to the record.

Issue 12's over-commit (a device offline past the grace on the node whose pod holds its slot)
and issue 16's lost slots (a Configuration deleted and applied again, an Instance deleted, the
deviceUsage removed by hand), each through what a user does and sees on the simulated cluster:
the pod holding the slot keeps it, and a second pod on a capacity-1 device is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from akri import naming
from akri.sim.cluster import Cluster
from akri.sim.manifests import pod
from tests.sim.users import User, advertised
from tests.support import eventually

CFG = "cfg"
DEVICE = naming.instance_name(CFG, "foo0")
FAST = {"offline_grace": 0.3, "reclaim_grace": 0.5, "reclaim_interval": 0.1}
JSON_PATCH: dict[str, Any] = {"_content_type": "application/json-patch+json"}


def configuration(capacity: int) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": CFG, "namespace": "default"},
        "spec": {
            "discoveryHandler": {"name": "debugEcho", "discoveryDetails": "descriptions: [foo0]"},
            "capacity": capacity,
        },
    }


def everything(capacity: int) -> dict[str, str]:
    """What a node that sees the device advertises while no slot is held."""
    return {naming.resource_name(DEVICE): str(capacity), naming.resource_name(CFG): "1"}


LEVELS = {"instance": DEVICE, "configuration": CFG}


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["node-a", "node-b"], workdir=socket_dir, agents=True, agent_options=FAST
    ) as running:
        yield running


async def nodes_are(user: User, expected: list[str]) -> None:
    async def matches() -> bool:
        found = await user.instance(DEVICE)
        return found is not None and sorted(found["spec"]["nodes"]) == expected

    await eventually(matches, f"{DEVICE} to list {expected}", deadline_s=60)


async def hold(user: User, resource: str, capacity: int = 1) -> dict[str, str]:
    """A pod `holder` on node-a using one slot through `resource`; the slots held then."""
    await user.apply(configuration(capacity))
    await advertised(user, "node-a", everything(capacity))
    await user.run(pod("holder", "node-a", resource, 1))
    await user.wait_running("holder")
    held = await user.usage(DEVICE)
    assert len(held) == 1
    return held


@pytest.mark.parametrize("level", LEVELS)
async def test_a_slot_stays_with_its_pod_while_the_device_is_offline_past_the_grace(
    cluster: Cluster, level: str
) -> None:
    """Issue 12: node-a leaves `nodes`, but its running pod keeps the slot."""
    user = User(cluster)
    held = await hold(user, LEVELS[level])

    cluster.nodes["node-a"].debug_echo.set_offline(["foo0"])
    await nodes_are(user, ["node-b"])
    assert await user.usage(DEVICE) == held
    cluster.nodes["node-a"].debug_echo.set_offline()
    await nodes_are(user, ["node-a", "node-b"])

    await user.run(pod("intruder", "node-b", LEVELS[level], 1))
    await user.wait_refused("intruder")
    assert await user.usage(DEVICE) == held
    assert await user.phase("holder") == "Running"


@pytest.mark.parametrize("level", LEVELS)
async def test_the_last_node_keeps_the_instance_while_its_pod_uses_a_slot(
    cluster: Cluster, level: str
) -> None:
    """The device goes offline on the only node seeing it: the Instance stays, without nodes."""
    user = User(cluster)
    cluster.nodes["node-b"].debug_echo.set_offline(["foo0"])
    held = await hold(user, LEVELS[level], capacity=1)

    cluster.nodes["node-a"].debug_echo.set_offline(["foo0"])
    await nodes_are(user, [])
    assert await user.usage(DEVICE) == held
    cluster.nodes["node-a"].debug_echo.set_offline()
    await nodes_are(user, ["node-a"])

    await user.run(pod("intruder", "node-a", LEVELS[level], 1))
    await user.wait_refused("intruder")
    assert await user.usage(DEVICE) == held


async def test_an_instance_left_by_every_node_goes_once_its_slots_are_free(
    cluster: Cluster,
) -> None:
    user = User(cluster)
    cluster.nodes["node-b"].debug_echo.set_offline(["foo0"])
    await hold(user, CFG)
    cluster.nodes["node-a"].debug_echo.set_offline(["foo0"])
    await nodes_are(user, [])

    await user.core.delete_namespaced_pod("holder", "default")

    await eventually(lambda: _gone(user, DEVICE), f"{DEVICE} to be deleted", deadline_s=60)


async def test_a_configuration_deleted_and_applied_again_keeps_the_slots_pods_hold(
    cluster: Cluster,
) -> None:
    """Issue 16 (a): the Instance stays (Terminating) until no container uses its slots."""
    user = User(cluster)
    held = await hold(user, CFG, capacity=2)
    await user.run(pod("second", "node-b", DEVICE, 1))
    await user.wait_running("second")
    held = await user.usage(DEVICE)
    old = await user.instance(DEVICE)
    assert old is not None

    await user.custom.delete_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "configurations", CFG
    )
    await user.apply(configuration(2))

    for node in ("node-a", "node-b"):
        await user.run(pod(f"intruder-{node}", node, CFG, 1))
        await user.wait_refused(f"intruder-{node}")
    found = await user.instance(DEVICE)
    assert found is not None
    assert found["metadata"]["uid"] == old["metadata"]["uid"]
    assert await user.usage(DEVICE) == held

    for name in ("holder", "second", "intruder-node-a", "intruder-node-b"):
        await user.core.delete_namespaced_pod(name, "default")
    await eventually(lambda: _replaced(user, old), "a new Instance", deadline_s=60)
    await user.run_until_admitted(pod("after", "node-b", DEVICE, 2))


async def test_an_instance_deleted_by_hand_stays_until_its_pod_ends(cluster: Cluster) -> None:
    """Issue 16 (b): `kubectl delete akrii` while a pod holds the only slot."""
    user = User(cluster)
    held = await hold(user, DEVICE)
    old = await user.instance(DEVICE)
    assert old is not None

    await user.custom.delete_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances", DEVICE
    )

    await user.run(pod("intruder", "node-b", DEVICE, 1))
    await user.wait_refused("intruder")
    assert await user.usage(DEVICE) == held
    for name in ("holder", "intruder"):
        await user.core.delete_namespaced_pod(name, "default")
    await eventually(lambda: _replaced(user, old), "a new Instance", deadline_s=60)
    await user.run_until_admitted(pod("after", "node-b", DEVICE, 1))


@pytest.mark.parametrize("level", LEVELS)
async def test_a_removed_device_usage_is_recorded_again(cluster: Cluster, level: str) -> None:
    """Issue 16 (c): a JSON patch removing spec/deviceUsage; node-a records its slot again."""
    user = User(cluster)
    held = await hold(user, LEVELS[level])

    await edit(user, [{"op": "remove", "path": "/spec/deviceUsage"}])

    async def recorded() -> bool:
        return await user.usage(DEVICE) == held

    await eventually(recorded, "the held slot to be recorded again", deadline_s=60)
    await user.run(pod("intruder", "node-b", LEVELS[level], 1))
    await user.wait_refused("intruder")


@pytest.mark.parametrize("level", LEVELS)
async def test_a_slot_given_away_by_hand_is_reported_as_a_conflict(
    cluster: Cluster, level: str
) -> None:
    user = User(cluster)
    held = await hold(user, LEVELS[level])
    (slot,) = held

    await edit(user, [{"op": "replace", "path": f"/spec/deviceUsage/{slot}", "value": "node-z"}])

    conflict = await eventually(lambda: _condition(user, "True"), "a SlotConflict condition")
    assert "node-a" in conflict["message"]
    assert "default/holder" in conflict["message"]
    assert "node-z" in conflict["message"]
    await eventually(lambda: _told(user, "holder"), "a SlotConflict event on the pod")
    assert await user.usage(DEVICE) == {slot: "node-z"}  # never taken from another holder

    await edit(user, [{"op": "replace", "path": f"/spec/deviceUsage/{slot}", "value": ""}])
    await eventually(lambda: _condition(user, "False"), "the conflict to be resolved")
    assert await user.usage(DEVICE) == held


async def edit(user: User, operations: list[dict[str, Any]]) -> None:
    """A JSON patch of the Instance, as `kubectl patch --type json` sends it."""
    await user.custom.patch_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances", DEVICE, operations, **JSON_PATCH
    )


async def _gone(user: User, name: str) -> bool:
    return await user.instance(name) is None


async def _replaced(user: User, old: dict[str, Any]) -> bool:
    found = await user.instance(DEVICE)
    return found is not None and found["metadata"]["uid"] != old["metadata"]["uid"]


async def _condition(user: User, status: str) -> dict[str, Any] | None:
    found = await user.instance(DEVICE) or {}
    for condition in (found.get("status") or {}).get("conditions") or []:
        if condition["type"] == "SlotConflict" and condition["status"] == status:
            return dict(condition)
    return None


async def _told(user: User, pod_name: str) -> bool:
    return "SlotConflict" in await user.reasons(pod_name)
