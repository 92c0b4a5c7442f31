"""A capacity lowered under running containers, against the kubelet and API emulators.

The containers keep their slots until they end; until releases bring the held slots down to
the new capacity, no slot goes to a new container, not even one its node still holds for a
container that ended (docs/design.md §5.5). Soak seed 2337421052 found the configuration-level
case: a node's ended container left its virtual device held past the lowered capacity, the
kubelet gave it to a new pod, and two pods used a device of capacity 1.
"""

from __future__ import annotations

import pytest

from akri import naming
from akri.sim.kubelet import AdmissionError, Container
from tests.agent.conftest import Cluster, StartNode, configuration

N, M = "node-n", "node-m"
CONFIGURATION_RESOURCE = "akri.sh/cfg"


async def lower_capacity(cluster: Cluster, instance: str, capacity: int) -> None:
    """What a Configuration edit comes to: the agents' lookup and the Instance follow it."""
    cluster.set_configuration(configuration("cfg", capacity=capacity))
    await cluster.change_instance(instance, capacity=capacity)


def held(usage: dict[str, str]) -> list[str]:
    return sorted(value for value in usage.values() if value)


async def test_a_configuration_level_device_held_over_capacity_goes_to_no_new_pod(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(configuration("cfg", capacity=2))
    a = await cluster.create_instance(configuration("cfg", capacity=2), "foo0", [N])
    n = await start_node(N)
    await n.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    first = await n.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    await n.until_capacity(CONFIGURATION_RESOURCE, 2, 2)  # its id, and a new one for the free slot
    await n.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    assert held(await cluster.usage(a)) == [f"C:cfg-0:{N}", f"C:cfg-1:{N}"]

    await lower_capacity(cluster, a, 1)

    await n.until_capacity(
        CONFIGURATION_RESOURCE, 0, 0
    )  # both held over capacity: offered to no new container
    assert n.kubelet.remove_pod(first.spec.uid)  # its id stays held (no reclaimer here)
    with pytest.raises(AdmissionError, match="unavailable"):
        await n.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    assert held(await cluster.usage(a)) == [f"C:cfg-0:{N}", f"C:cfg-1:{N}"]


async def test_an_instance_level_slot_held_over_capacity_goes_to_no_new_pod(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(configuration("cfg", capacity=2))
    a = await cluster.create_instance(configuration("cfg", capacity=2), "foo0", [N, M])
    instance_resource = naming.resource_name(a)
    n, m = await start_node(N), await start_node(M)
    await n.until_capacity(instance_resource, 2, 2)
    first = await n.admit(Container("app", {instance_resource: 1}))
    assert first.ids("app", instance_resource) == (
        f"{a}-0",
    )  # each node prefers its own share of slots
    await m.until_capacity(instance_resource, 2, 1)
    await m.admit(Container("app", {instance_resource: 1}))
    assert held(await cluster.usage(a)) == [M, N]

    await lower_capacity(cluster, a, 1)

    await n.until_capacity(instance_resource, 1, 0)  # slot 0 is listed, but not for a new container
    assert n.kubelet.remove_pod(first.spec.uid)
    with pytest.raises(AdmissionError, match="unavailable"):
        await n.admit(Container("app", {instance_resource: 1}))
    assert (await cluster.usage(a))[f"{a}-0"] == N
