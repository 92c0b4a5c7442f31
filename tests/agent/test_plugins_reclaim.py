"""The slot reclaimer against the kubelet's PodResources and the API emulator (docs/design.md §5.5).

Most tests drive single rounds with a hand-moved clock, so "after the grace period" is exact;
one runs the reclaimer's own loop end to end.
"""

from __future__ import annotations

from akri import naming
from akri.agent.plugins import Reclaimer
from akri.sim.kubelet import Container
from akri.slots import Holding
from tests.agent.conftest import (
    AgentNode,
    Clock,
    Cluster,
    StartNode,
    allocate,
    configuration,
)
from tests.support import eventually

CONFIG = configuration("cam", capacity=2)
CL = "akri.sh/cam"
GRACE_S = 20.0


def reclaimer(node: AgentNode, clock: Clock) -> Reclaimer:
    return Reclaimer(
        node.cache,
        node.name,
        node.kubelet.pod_resources_socket,
        allocations=node.allocations,
        grace=GRACE_S,
        clock=clock,
    )


async def setup(
    cluster: Cluster, start_node: StartNode, clock: Clock, *names: str
) -> tuple[str, list[AgentNode]]:
    cluster.set_configuration(CONFIG)
    nodes = [await start_node(name, clock=clock) for name in names]
    instance = await cluster.create_instance(CONFIG, "foo0", list(names))
    for node in nodes:
        await node.until_capacity(naming.resource_name(instance), 2, 2)
        await node.until_capacity(CL, 1, 1)
    return instance, nodes


async def test_slots_of_a_removed_pod_are_freed_after_the_grace_period(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    il = naming.resource_name(instance)
    first = await node.admit(Container("app", {il: 1}))
    await node.until_capacity(CL, 1, 1)  # the kubelet sees the slot left for CL
    second = await node.admit(Container("app", {CL: 1}))
    (slot,) = first.ids("app", il)
    (device,) = second.ids("app", CL)
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S  # past the grace of the Allocates themselves
    assert await rounds.reclaim() == []  # in use

    for pod in (first, second):
        assert node.kubelet.remove_pod(pod.spec.uid)
    assert await rounds.reclaim() == []  # first seen unused
    clock.now += GRACE_S - 1
    assert await rounds.reclaim() == []
    assert sorted((await cluster.usage(instance)).values()) == sorted(
        ["node-a", f"C:{device}:node-a"]
    )
    clock.now += 1

    freed = await rounds.reclaim()

    assert set(freed) == {Holding(il, slot), Holding(CL, device)}
    assert set((await cluster.usage(instance)).values()) == {""}
    await node.until_capacity(il, 2, 2)


async def test_slots_in_use_and_other_nodes_slots_are_never_freed(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (a, b) = await setup(cluster, start_node, clock, "node-a", "node-b")
    il = naming.resource_name(instance)
    await a.admit(Container("app", {il: 1}))
    await b.until_capacity(il, 2, 1)
    other = await b.admit(Container("app", {il: 1}))
    assert b.kubelet.remove_pod(other.spec.uid)  # b's slot is unused, but only b may free it
    usage = await cluster.usage(instance)
    rounds = reclaimer(a, clock)

    for _ in range(3):
        clock.now += 2 * GRACE_S
        assert await rounds.reclaim() == []

    assert await cluster.usage(instance) == usage


async def test_a_granted_slot_the_kubelet_has_not_reported_yet_is_kept_for_the_grace(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Also the safety net of an Allocate whose answer the kubelet never recorded."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    il = naming.resource_name(instance)
    slot = naming.slot_id(instance, 1)
    rounds = reclaimer(node, clock)
    assert await rounds.reclaim() == []

    await allocate(node, il, [slot])  # straight to the plugin: PodResources never lists it

    clock.now += GRACE_S - 1
    assert await rounds.reclaim() == []
    assert (await cluster.usage(instance))[slot] == "node-a"
    clock.now += GRACE_S
    assert await rounds.reclaim() == [Holding(il, slot)]


async def test_nothing_is_freed_while_pod_resources_does_not_answer(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    il = naming.resource_name(instance)
    pod = await node.admit(Container("app", {il: 1}))
    (slot,) = pod.ids("app", il)
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S
    await node.kubelet.stop()

    for _ in range(3):
        clock.now += 2 * GRACE_S
        assert await rounds.reclaim() == []

    assert (await cluster.usage(instance))[slot] == "node-a"
    await node.kubelet.start()
    assert await rounds.reclaim() == []  # the pod is back in the list


async def test_the_reclaimer_loop_frees_what_a_removed_pod_held(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a", reclaim=True, grace=0.1)
    instance = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    il = naming.resource_name(instance)
    await node.until_capacity(il, 2, 2)
    await node.until_capacity(CL, 1, 1)
    pod = await node.admit(Container("app", {CL: 1}))

    node.kubelet.remove_pod(pod.spec.uid)

    async def all_free() -> bool:
        return set((await cluster.usage(instance)).values()) == {""}

    await eventually(all_free, "the slot to be freed")
