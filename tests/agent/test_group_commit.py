"""Group commit: many concurrent Allocates on several nodes, decided together per node and
written as one guarded write per Instance, never over-commit and refuse each request alone.

Every node fires a burst of Allocates straight at its plugins (instance- and configuration-
level mixed, some bound to be refused because another node or capacity got there first), as a
kubelet under load would. Afterwards the Instances read back from the API must hold exactly
what was granted: no slot held twice or past capacity, every grant recorded for its node, and
nothing for a refused request.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import grpc

from akri import naming, slots
from akri.agent.plugins.group_commit import Grant, Request, State, decide_batch
from akri.api.pool import view
from akri.kube.reflector import Key
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.slots import ConfigurationHolder, Holding, NodeHolder
from tests.agent.conftest import (
    DEADLINE_S,
    NAMESPACE,
    AgentNode,
    Cluster,
    StartNode,
    allocate,
    configuration,
)
from tests.support import eventually

CONFIG = configuration("cam", capacity=3, unique=False)
CONFIGURATION_RESOURCE = naming.resource_name("cam")
NODES = ("node-0", "node-1", "node-2", "node-3")
DEVICES = 3
PER_NODE = 12
ROUNDS = 4


@dataclass(frozen=True)
class Ask:
    node: AgentNode
    resource: str
    device: str


async def ask(request: Ask) -> grpc.StatusCode:
    return await allocate_code(request.node, request.resource, [request.device])


async def allocate_code(node: AgentNode, resource: str, ids: list[str]) -> grpc.StatusCode:
    try:
        await allocate(node, resource, ids)
    except grpc.aio.AioRpcError as error:
        return error.code()
    return grpc.StatusCode.OK


def burst(rng: random.Random, nodes: Sequence[AgentNode], instances: Sequence[str]) -> list[Ask]:
    """PER_NODE requests per node: instance-level ones name a slot this node has not asked
    for yet (other nodes may), configuration-level ones a virtual device of their own."""
    asks = []
    for node in nodes:
        free = [(name, i) for name in instances for i in range(CONFIG.spec.capacity)]
        rng.shuffle(free)
        for n in range(PER_NODE):
            if rng.random() < 0.5 and free:
                name, index = free.pop()
                asks.append(Ask(node, naming.resource_name(name), naming.slot_id(name, index)))
            else:
                asks.append(
                    Ask(
                        node, CONFIGURATION_RESOURCE, naming.configuration_level_device_id("cam", n)
                    )
                )
    rng.shuffle(asks)
    return asks


async def test_bursts_of_allocates_on_four_nodes_grant_each_slot_once(
    cluster: Cluster, start_node: StartNode
) -> None:
    rng = random.Random(3)
    cluster.set_configuration(CONFIG)
    nodes = [await start_node(name) for name in NODES]
    instances = [
        await cluster.create_instance(CONFIG, f"cam{i}", list(NODES)) for i in range(DEVICES)
    ]
    resources = [CONFIGURATION_RESOURCE, *map(naming.resource_name, instances)]
    for node in nodes:
        await node.until_registered(*resources)
    granted_total = refused_total = 0
    for round_ in range(ROUNDS):
        asks = burst(rng, nodes, instances)
        results = await asyncio.gather(*map(ask, asks))
        assert set(results) <= {grpc.StatusCode.OK, grpc.StatusCode.FAILED_PRECONDITION}
        granted = [a for a, code in zip(asks, results, strict=True) if code == grpc.StatusCode.OK]
        granted_total += len(granted)
        refused_total += len(asks) - len(granted)
        pool = [view(await cluster.read(name)) for name in instances]
        check(pool, nodes, granted, f"round {round_}")
        for name in instances:  # every slot free again for the next round
            await cluster.change_instance(name, device_usage={})
        await eventually(
            lambda: all(all_free(node, instances) for node in nodes), "every node to see them free"
        )
    assert granted_total >= ROUNDS * DEVICES * CONFIG.spec.capacity * 3 // 4  # real contention
    assert refused_total > 0
    batches = sum(node.manager.commits.batches for node in nodes)
    assert batches < ROUNDS * len(nodes) * PER_NODE  # requests were decided together


def all_free(node: AgentNode, instances: Sequence[str]) -> bool:
    found = [node.cache.get("default", name) for name in instances]
    return all(i is not None and not i.spec.device_usage for i in found)


def check(
    pool: Sequence[slots.SlotPool], nodes: Sequence[AgentNode], granted: list[Ask], when: str
) -> None:
    for instance in pool:
        assert instance.held <= instance.capacity, f"{when}: {instance.name} over capacity"
        assert not slots.usage_problems(instance), when
    by_slot = {
        naming.slot_id(i.name, index): holder for i in pool for index, holder in i.slots.items()
    }
    for node in nodes:
        mine = {Holding(a.resource, a.device) for a in granted if a.node is node}
        assert slots.holdings(pool, node.name) == mine, f"{when}: {node.name} holds other slots"
    for a in granted:
        if a.resource != CONFIGURATION_RESOURCE:
            assert by_slot[a.device] == NodeHolder(a.node.name), f"{when}: {a}"
    bound = Counter(
        (holder.node, holder.vdev)
        for holder in by_slot.values()
        if isinstance(holder, ConfigurationHolder)
    )
    assert all(count == 1 for count in bound.values()), f"{when}: {bound}"


# --- the pure decision of one batch ----------------------------------------------------------

KEY = ("default", "cam-a")
INSTANCE_RESOURCE = naming.resource_name("cam-a")


def instance_level_request(*indexes: int, node: str = "node-0") -> Request:
    wanted = [naming.slot_id("cam-a", i) for i in indexes]

    def decide(state: State) -> tuple[dict[Key, slots.SlotPool], Grant]:
        return {KEY: slots.allocate_instance_level(state[KEY], node, wanted)}, Grant(
            [["cam-a"]], {}
        )

    return Request(lambda: (KEY,), decide, frozenset(Holding(INSTANCE_RESOURCE, s) for s in wanted))


def instance(**usage: str) -> slots.SlotPool:
    return slots.SlotPool("cam-a", "cam", 2, ("node-0",), usage)


def test_requests_are_decided_in_order_each_refused_alone() -> None:
    decided = decide_batch(
        {KEY: instance()}, "node-0", [instance_level_request(0), instance_level_request(0, 1)], ()
    )
    first, second = decided.outcomes
    assert isinstance(first, Grant)
    assert isinstance(second, Grant)  # slot 0 is this node's already: a re-offer passes
    third = decide_batch(
        {KEY: instance()}, "node-0", [instance_level_request(1), instance_level_request(2)], ()
    )
    assert isinstance(third.outcomes[1], slots.AllocationError)  # not a slot of cam-a
    assert third.state[KEY].usage == {naming.slot_id("cam-a", 1): "node-0"}


def test_a_refused_request_gives_back_what_an_earlier_round_wrote_for_it() -> None:
    slot0, slot1 = naming.slot_id("cam-a", 0), naming.slot_id("cam-a", 1)
    written = instance(**{slot0: "node-0", slot1: "node-1"})  # round 1 took slot 0; then
    refused = instance_level_request(0, 1)  # slot 1 went to another node
    decided = decide_batch({KEY: written}, "node-0", [refused], held_before=())
    assert isinstance(decided.outcomes[0], slots.AllocationError)
    assert decided.state[KEY].usage == {slot0: "", slot1: "node-1"}
    kept = decide_batch({KEY: written}, "node-0", [refused], {Holding(INSTANCE_RESOURCE, slot0)})
    assert kept.state[KEY].usage == {slot0: "node-0", slot1: "node-1"}  # held before: stays
    shared = decide_batch({KEY: written}, "node-0", [refused, instance_level_request(0)], ())
    assert shared.state[KEY].usage == {slot0: "node-0", slot1: "node-1"}  # granted to another


# --- requests queued while a write meets a conflict ------------------------------------------


async def test_requests_queued_while_a_write_conflicts_join_its_batch(
    apiserver: ApiServer, cluster: Cluster, start_node: StartNode
) -> None:
    """A burst whose first request started a batch alone: the others, queued while its write
    was in flight, are decided with it once the write meets a newer state, and the batch keeps
    what this node held before it on an Instance only they read."""
    config = configuration("cam", capacity=4, unique=False)
    cluster.set_configuration(config)
    node = await start_node("node-0", allocate_timeout=DEADLINE_S)  # holds the API for a while
    a, b = [await cluster.create_instance(config, d, ["node-0"]) for d in ("a", "b")]
    instance_resource_a, instance_resource_b = naming.resource_name(a), naming.resource_name(b)
    a0, a1, a2, a3 = (naming.slot_id(a, i) for i in range(4))
    b0, b1 = naming.slot_id(b, 0), naming.slot_id(b, 1)
    await cluster.change_instance(b, device_usage={b0: "node-0", b1: "node-1"})
    await node.until_registered(instance_resource_a, instance_resource_b)
    await node.until(
        lambda: (
            (seen := node.cache.get(NAMESPACE, b)) is not None
            and seen.spec.device_usage.get(b0) == "node-0"
        ),
        "node-0 to see that it holds b-0",
    )
    batches = node.manager.commits.batches
    held = apiserver.faults.add(
        FaultRule(verb="update", resource="instances", name=a, count=1, hold=True)
    )
    first = asyncio.create_task(ask(Ask(node, instance_resource_a, a0)))
    await eventually(lambda: held.hits == 1, "the first write to reach the API")
    await cluster.change_instance(a, device_usage={a3: "node-1"})  # the held write will meet it
    rest = [
        Ask(node, instance_resource_a, a1),
        Ask(node, instance_resource_a, a2),
        Ask(node, instance_resource_a, a3),
    ]
    later = [asyncio.create_task(ask(r)) for r in rest]
    refused_pair = asyncio.create_task(allocate_code(node, instance_resource_b, [b0, b1]))
    await eventually(lambda: node.manager.commits.queued == 4, "the others to be queued")
    apiserver.faults.remove(held.id)
    assert await first == grpc.StatusCode.OK
    assert [await t for t in later] == [
        grpc.StatusCode.OK,
        grpc.StatusCode.OK,
        grpc.StatusCode.FAILED_PRECONDITION,  # a3 is node-1's
    ]
    assert await refused_pair == grpc.StatusCode.FAILED_PRECONDITION  # b1 is node-1's
    assert node.manager.commits.batches == batches + 1
    assert await cluster.usage(a) == {a0: "node-0", a1: "node-0", a2: "node-0", a3: "node-1"}
    assert (await cluster.usage(b))[b0] == "node-0"  # held before: the refusal keeps it


async def test_a_request_that_joins_a_batch_keeps_its_own_deadline(
    apiserver: ApiServer, cluster: Cluster, start_node: StartNode
) -> None:
    """The batch's write timeout starts again when requests join it: a request that joined
    late is still written after the first request's deadline, within its own."""
    timeout = 4.0  # the deadline of each Allocate and of the batch; the test spans ~1.1x it
    config = configuration("cam", capacity=4, unique=False)
    cluster.set_configuration(config)
    node = await start_node("node-0", allocate_timeout=timeout)
    a = await cluster.create_instance(config, "a", ["node-0"])
    instance_resource_a = naming.resource_name(a)
    a0, a1, a3 = (naming.slot_id(a, i) for i in (0, 1, 3))
    await node.until_registered(instance_resource_a)
    loop = asyncio.get_running_loop()
    first_write = apiserver.faults.add(
        FaultRule(verb="update", resource="instances", name=a, count=1, hold=True)
    )
    started = loop.time()
    first = asyncio.create_task(ask(Ask(node, instance_resource_a, a0)))
    await eventually(lambda: first_write.hits == 1, "the first write to reach the API")
    await cluster.change_instance(a, device_usage={a3: "node-1"})  # the held write will meet it
    second_write = apiserver.faults.add(
        FaultRule(verb="update", resource="instances", name=a, count=1, hold=True)
    )
    # Not a synchronisation: sets the late request's own deadline 0.6 x timeout after the
    # first's, which leaves it ~2 s to be written once the first deadline has passed.
    await asyncio.sleep(timeout * 0.6)
    late = asyncio.create_task(ask(Ask(node, instance_resource_a, a1)))
    await eventually(lambda: node.manager.commits.queued == 1, "the late request to be queued")
    apiserver.faults.remove(first_write.id)  # meets the change: decided again with `late`
    await eventually(lambda: second_write.hits == 1, "the batch's next write to reach the API")
    assert await first == grpc.StatusCode.DEADLINE_EXCEEDED  # its own deadline
    # Past the batch's first deadline (it started after `first`), before `late`'s own.
    await eventually(lambda: loop.time() > started + timeout + 0.2, "the first deadline to pass")
    assert not late.done()
    apiserver.faults.remove(second_write.id)
    assert await late == grpc.StatusCode.OK
    assert await cluster.usage(a) == {a0: "node-0", a1: "node-0", a3: "node-1"}
