"""The slot reclaimer against the kubelet's PodResources and the API emulator (docs/design.md §5.5).

Both ways: slots no container uses are freed after the grace period, and slots containers use
that the record lost are recorded again (or reported when another holder has them). Most tests
drive single rounds with a hand-moved clock, so "after the grace period" is exact; some run the
reclaimer's own loop end to end.
"""

from __future__ import annotations

import asyncio

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.agent.plugins import Reclaimer
from akri.agent.plugins.reclaim import WRITE_TIMEOUT_S, Round
from akri.kube.guarded import HTTP_NOT_FOUND
from akri.sim.apiserver import ApiServer
from akri.sim.kubelet import AdmittedPod, Container
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
CONFIGURATION_RESOURCE = "akri.sh/cam"
GRACE_S = 20.0


def reclaimer(node: AgentNode, clock: Clock, write_timeout: float = WRITE_TIMEOUT_S) -> Reclaimer:
    return Reclaimer(
        node.cache,
        node.name,
        node.kubelet.pod_resources_socket,
        allocations=node.allocations,
        metrics=node.metrics,
        grace=GRACE_S,
        write_timeout=write_timeout,
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
        await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    return instance, nodes


async def use_instance_level(node: AgentNode, instance: str) -> tuple[str, AdmittedPod, str]:
    """A pod using one instance-level slot: the resource, the pod and the slot."""
    instance_resource = naming.resource_name(instance)
    pod = await node.admit(Container("app", {instance_resource: 1}))
    (slot,) = pod.ids("app", instance_resource)
    return instance_resource, pod, slot


async def use_both(node: AgentNode, instance: str) -> tuple[str, AdmittedPod, AdmittedPod]:
    """One pod using an instance-level slot, then one using the other slot through the
    configuration-level resource."""
    instance_resource, first, _ = await use_instance_level(node, instance)
    await node.until_capacity(
        CONFIGURATION_RESOURCE, 1, 1
    )  # the kubelet sees the slot left for the configuration-level resource
    return instance_resource, first, await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))


async def test_slots_of_a_removed_pod_are_freed_after_the_grace_period(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, first, second = await use_both(node, instance)
    (slot,) = first.ids("app", instance_resource)
    (device,) = second.ids("app", CONFIGURATION_RESOURCE)
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S  # past the grace of the Allocates themselves
    assert (await rounds.reclaim()).freed == []  # in use

    for pod in (first, second):
        assert node.kubelet.remove_pod(pod.spec.uid)
    assert (await rounds.reclaim()).freed == []  # first seen unused
    clock.now += GRACE_S - 1
    assert (await rounds.reclaim()).freed == []
    assert sorted((await cluster.usage(instance)).values()) == sorted(
        ["node-a", f"C:{device}:node-a"]
    )
    clock.now += 1

    freed = (await rounds.reclaim()).freed

    assert set(freed) == {Holding(instance_resource, slot), Holding(CONFIGURATION_RESOURCE, device)}
    assert set((await cluster.usage(instance)).values()) == {""}
    await node.until_capacity(instance_resource, 2, 2)


async def test_slots_of_a_pod_that_ended_are_freed_at_once(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Issue 27: Instances lingered ~25 s after their brokers were gone, the reclaim grace.
    A pod gone from the API (or Succeeded, or Failed) runs no container: its slots go at once."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, first, second = await use_both(node, instance)
    (slot,) = first.ids("app", instance_resource)
    (device,) = second.ids("app", CONFIGURATION_RESOURCE)
    rounds = reclaimer(node, clock)
    clock.now += 1  # the Allocates came before the List that sees their containers
    assert (await rounds.reclaim()).freed == []  # in use

    await node.end(first)
    await client.CoreV1Api(cluster.api).patch_namespaced_pod_status(
        second.spec.uid, "default", {"status": {"phase": "Succeeded"}}
    )
    assert node.kubelet.remove_pod(second.spec.uid)
    done = await rounds.reclaim()

    assert (
        set(done.freed)
        == set(done.ended)
        == {Holding(instance_resource, slot), Holding(CONFIGURATION_RESOURCE, device)}
    )
    assert set((await cluster.usage(instance)).values()) == {""}


async def test_a_pod_still_in_the_api_keeps_its_slots_for_the_grace(
    cluster: Cluster, start_node: StartNode
) -> None:
    """What the grace is for: a restarted kubelet lists no pods until it knows them again, so
    a slot missing from PodResources whose pod still exists may well be in use."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    _, pod, slot = await use_instance_level(node, instance)
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S  # past the grace of the Allocate itself
    assert (await rounds.reclaim()).freed == []

    assert node.kubelet.remove_pod(pod.spec.uid)  # not listed; the pod runs on

    clock.now += GRACE_S - 1
    assert (await rounds.reclaim()).freed == []
    assert (await rounds.reclaim()).freed == []
    assert (await cluster.usage(instance))[slot] == "node-a"


async def test_a_slot_granted_again_after_its_pod_ended_waits_for_the_grace(
    cluster: Cluster, start_node: StartNode
) -> None:
    """The race: the pod that used the slot ended, and the kubelet gave the slot to a new
    container before the round; the new container is not listed yet (its Allocate in flight),
    so freeing the slot because its last user ended would free it under the new one."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, pod, slot = await use_instance_level(node, instance)
    rounds = reclaimer(node, clock)
    clock.now += 1
    assert (await rounds.reclaim()).freed == []
    await node.end(pod)
    clock.now += 1

    await allocate(
        node, instance_resource, [slot]
    )  # straight to the plugin: PodResources never lists it

    assert (await rounds.reclaim()).freed == []
    assert (await cluster.usage(instance))[slot] == "node-a"


async def test_the_loop_frees_the_slots_of_a_deleted_instance_when_its_pods_end(
    cluster: Cluster, start_node: StartNode
) -> None:
    """End to end, with a grace of an hour: deleting an Instance waits for its pods, not for
    the grace (its slots finalizer goes once the last slot is free)."""
    cluster.set_configuration(CONFIG)
    # Rounds only when called: the Instance's deletion calls one, and rounds follow promptly
    # while its pods end.
    node = await start_node("node-a", reclaim=True, grace=3600, interval=3600)
    instance = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    reclaimer = node.agent.reclaimer
    assert reclaimer is not None

    await cluster.delete_instance(instance)  # waits on its slots finalizer
    await eventually(lambda: bool(reclaimer.seen_in_use), "a round to see the slot in use")
    await node.end(pod)

    async def gone() -> bool:
        try:
            await cluster.read(instance)
        except ApiException as error:
            return error.status == HTTP_NOT_FOUND
        return False

    await eventually(gone, "the slot freed and the Instance gone")


async def test_slots_in_use_and_other_nodes_slots_are_never_freed(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (a, b) = await setup(cluster, start_node, clock, "node-a", "node-b")
    instance_resource = naming.resource_name(instance)
    await a.admit(Container("app", {instance_resource: 1}))
    await b.until_capacity(instance_resource, 2, 1)
    other = await b.admit(Container("app", {instance_resource: 1}))
    assert b.kubelet.remove_pod(other.spec.uid)  # b's slot is unused, but only b may free it
    usage = await cluster.usage(instance)
    rounds = reclaimer(a, clock)

    for _ in range(3):
        clock.now += 2 * GRACE_S
        assert (await rounds.reclaim()).freed == []

    assert await cluster.usage(instance) == usage


async def test_a_granted_slot_the_kubelet_has_not_reported_yet_is_kept_for_the_grace(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Also the safety net of an Allocate whose answer the kubelet never recorded."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource = naming.resource_name(instance)
    slot = naming.slot_id(instance, 1)
    rounds = reclaimer(node, clock)
    assert (await rounds.reclaim()).freed == []

    await allocate(
        node, instance_resource, [slot]
    )  # straight to the plugin: PodResources never lists it

    clock.now += GRACE_S - 1
    assert (await rounds.reclaim()).freed == []
    assert (await cluster.usage(instance))[slot] == "node-a"
    clock.now += GRACE_S
    assert (await rounds.reclaim()).freed == [Holding(instance_resource, slot)]


async def stale_slot(
    cluster: Cluster, start_node: StartNode, clock: Clock, write_timeout: float = WRITE_TIMEOUT_S
) -> tuple[str, AgentNode, Reclaimer, Holding]:
    """A node whose reclaimer frees an instance-level slot at its next round."""
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, pod, slot = await use_instance_level(node, instance)
    rounds = reclaimer(node, clock, write_timeout)
    clock.now += 2 * GRACE_S  # past the grace of the Allocate itself
    assert node.kubelet.remove_pod(pod.spec.uid)
    assert (await rounds.reclaim()).freed == []  # first seen unused
    clock.now += GRACE_S
    return instance, node, rounds, Holding(instance_resource, slot)


async def test_a_slow_release_holds_up_only_allocates_of_its_slot_and_is_not_cut(
    apiserver: ApiServer, cluster: Cluster, start_node: StartNode
) -> None:
    """Allocates used to wait while a release was written, so the write was cut at their
    deadline: on a loaded API every attempt was cut and the slot stayed held. Now only an
    Allocate of the slot being freed waits (the kubelet may offer it again meanwhile) and takes
    it again once the release is written, so a granted slot is never freed under its container."""
    instance, node, rounds, stale = await stale_slot(cluster, start_node, Clock())
    other = naming.slot_id(instance, 1 - int(stale.device.rpartition("-")[2]))
    held = apiserver.faults.add(verb="update", resource="instances", hold=True, count=1)
    release = asyncio.create_task(rounds.reclaim())
    await eventually(lambda: held.hits, "the release to reach the API")

    again = asyncio.create_task(allocate(node, stale.resource, [stale.device]))
    await allocate(node, stale.resource, [other])

    assert (await cluster.usage(instance))[other] == "node-a"
    assert not release.done()
    assert not again.done()
    apiserver.faults.remove(held.id)  # as late as it is, the release lands
    assert (await release).freed == [stale]
    await again
    assert await cluster.usage(instance) == {stale.device: "node-a", other: "node-a"}
    assert not node.allocations.fenced([stale])


async def test_a_release_cut_without_an_answer_keeps_its_slot_fenced_until_the_next_round(
    apiserver: ApiServer, cluster: Cluster, start_node: StartNode
) -> None:
    """A write cut before the API answered may still land: an Allocate that got the slot
    meanwhile without a write of its own would then hold a slot the record calls free."""
    instance, node, cut, stale = await stale_slot(cluster, start_node, Clock(), write_timeout=0.1)
    held = apiserver.faults.add(verb="update", resource="instances", hold=True)
    assert (await cut.reclaim()).freed == []  # cut: no answer
    assert node.allocations.fenced([stale])

    again = asyncio.create_task(allocate(node, stale.resource, [stale.device]))
    apiserver.faults.remove(held.id)
    await cluster.change_instance(instance, device_usage={stale.device: ""})  # it lands late
    await cut.reclaim()
    await again

    assert not node.allocations.fenced([stale])
    assert (await cluster.usage(instance))[stale.device] == "node-a"


async def test_nothing_is_freed_while_pod_resources_does_not_answer(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    _, _, slot = await use_instance_level(node, instance)
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S
    await node.kubelet.stop()

    for _ in range(3):
        clock.now += 2 * GRACE_S
        assert (await rounds.reclaim()).freed == []

    assert (await cluster.usage(instance))[slot] == "node-a"
    await node.kubelet.start()
    assert (await rounds.reclaim()).freed == []  # the pod is back in the list


async def test_the_reclaimer_loop_frees_what_a_removed_pod_held(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a", reclaim=True, grace=0.1)
    instance = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    instance_resource = naming.resource_name(instance)
    await node.until_capacity(instance_resource, 2, 2)
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))

    node.kubelet.remove_pod(pod.spec.uid)

    async def all_free() -> bool:
        return set((await cluster.usage(instance)).values()) == {""}

    await eventually(all_free, "the slot to be freed")


async def events(cluster: Cluster, pod: str) -> list[tuple[str, str]]:
    found = await client.CoreV1Api(cluster.api).list_namespaced_event(
        "default", field_selector=f"involvedObject.name={pod}"
    )
    return [(e.reason, e.message) for e in found.items]


async def test_slots_in_use_that_the_record_lost_are_recorded_again(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, first, second = await use_both(node, instance)
    held = await cluster.usage(instance)
    rounds = reclaimer(node, clock)
    assert await rounds.reclaim() == Round()  # remembers the configuration-level binding

    await cluster.change_instance(instance, device_usage={})

    done = await rounds.reclaim()
    assert set(done.recorded) == {
        Holding(instance_resource, *first.ids("app", instance_resource)),
        Holding(CONFIGURATION_RESOURCE, *second.ids("app", CONFIGURATION_RESOURCE)),
    }
    assert await cluster.usage(instance) == held
    assert await rounds.reclaim() == Round()


async def test_a_lost_slot_is_recorded_again_at_once_not_at_the_next_interval(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a", reclaim=True, interval=3600.0)
    instance = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    (device,) = pod.ids("app", CONFIGURATION_RESOURCE)

    await cluster.change_instance(instance, device_usage={})

    async def recorded() -> bool:
        return set((await cluster.usage(instance)).values()) == {f"C:{device}:node-a"}

    await eventually(recorded, "the slot to be recorded again")


async def test_a_binding_nobody_remembers_is_reported_on_the_pod(
    cluster: Cluster, start_node: StartNode
) -> None:
    """The record lost while the agent was down: the slot of a virtual device is not known."""
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    await node.restart_agent()
    await cluster.change_instance(instance, device_usage={})
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)

    done = await reclaimer(node, clock).reclaim()

    assert done.unknown == [
        Holding(CONFIGURATION_RESOURCE, *pod.ids("app", CONFIGURATION_RESOURCE))
    ]
    told = await events(cluster, pod.spec.name)
    assert [reason for reason, _ in told] == ["SlotNotRecorded"]
    assert "container app of pod default/node-a-pod-1" in told[0][1]


async def test_a_slot_in_use_held_by_another_node_is_reported_not_taken(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    instance_resource, pod, slot = await use_instance_level(node, instance)
    await cluster.change_instance(instance, device_usage={slot: "node-z"})
    rounds = reclaimer(node, clock)

    for _ in range(2):
        done = await rounds.reclaim()
        assert [str(c.holder) for c in done.conflicts] == ["held by node node-z"]

    assert await cluster.usage(instance) == {slot: "node-z"}
    status = (await cluster.read(instance)).status
    assert status is not None
    condition = status.condition("SlotConflict")
    assert condition is not None
    assert condition.status == "True"
    ((reason, message),) = await events(cluster, pod.spec.name)
    assert reason == "SlotConflict"
    # Issue 27: the pod's container was named twice ("container c of pod p: container c of...").
    assert message.count("container ") == 1, message
    assert message.startswith(f"container app of pod default/{pod.spec.name}: slot {slot} ")

    await cluster.change_instance(instance, device_usage={slot: ""})
    assert (await rounds.reclaim()).recorded == [Holding(instance_resource, slot)]
    status = (await cluster.read(instance)).status
    assert status is not None
    condition = status.condition("SlotConflict")
    assert condition is not None
    assert condition.status == "False"


async def test_an_instance_kept_only_for_a_used_slot_goes_with_the_slot(
    cluster: Cluster, start_node: StartNode
) -> None:
    clock = Clock()
    instance, (node,) = await setup(cluster, start_node, clock, "node-a")
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1}))
    await cluster.change_instance(instance, nodes=[])  # its device went offline everywhere
    rounds = reclaimer(node, clock)
    clock.now += 2 * GRACE_S
    assert (await rounds.reclaim()).freed == []
    assert node.kubelet.remove_pod(pod.spec.uid)
    assert (await rounds.reclaim()).freed == []
    clock.now += GRACE_S

    assert len((await rounds.reclaim()).freed) == 1

    with pytest.raises(ApiException) as gone:
        await cluster.read(instance)
    assert gone.value.status == HTTP_NOT_FOUND
