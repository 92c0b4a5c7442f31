"""Four nodes racing for the slots of shared Instances never break the invariant
(docs/design.md §5.1).

Every round each node admits a pod at the same time, asking for an instance-level or the
configuration-level resource; some pods then go away and their slots are reclaimed. After
every step the Instances are read back from the API and compared with what the kubelets
admitted: no Instance over capacity, no corrupt slot, and each node's holdings are exactly
the device ids its kubelet gave to containers, each bound to one slot.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence

import pytest

from akri import naming, slots
from akri.agent.plugins import Reclaimer
from akri.api.pool import view
from akri.sim.kubelet import AdmissionError, Container
from tests.agent.conftest import AgentNode, Clock, Cluster, StartNode, configuration

CONFIG = configuration("cam", capacity=2, unique=True)
CONFIGURATION_RESOURCE = "akri.sh/cam"
ROUNDS = 300
SOAK_ROUNDS = 2000
NODES = ("node-0", "node-1", "node-2", "node-3")


async def check_invariant(
    cluster: Cluster, nodes: Sequence[AgentNode], instances: Sequence[str], when: str
) -> None:
    pool = [view(await cluster.read(name)) for name in instances]
    for instance in pool:
        assert instance.held <= instance.capacity, f"{when}: {instance.name} over capacity"
        assert not slots.usage_problems(instance), f"{when}: {slots.usage_problems(instance)}"
    for node in nodes:
        assert slots.holdings(pool, node.name) == node.admitted(), f"{when}: {node.name}"
        bound = Counter(
            holding.device
            for instance in pool
            for index in instance.slots
            if (holding := instance.holding(index, node.name))
            and holding.resource == CONFIGURATION_RESOURCE
        )
        assert all(count == 1 for count in bound.values()), f"{when}: {node.name} {bound}"


async def admit(node: AgentNode, resource: str, count: int) -> bool:
    try:
        await node.admit(Container("app", {resource: count}))
    except AdmissionError:
        return False
    return True


async def test_concurrent_allocations_on_four_nodes_keep_the_invariant(
    cluster: Cluster, start_node: StartNode
) -> None:
    await race(cluster, start_node, ROUNDS, seed=7)


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_soak_hundreds_of_racing_rounds(cluster: Cluster, start_node: StartNode) -> None:
    await race(cluster, start_node, SOAK_ROUNDS, seed=11)


async def race(cluster: Cluster, start_node: StartNode, rounds: int, *, seed: int) -> None:
    """Random concurrent admissions on every node, reclaiming between rounds; the invariant is
    read back from the API after every round."""
    rng = random.Random(seed)
    clock = Clock()
    cluster.set_configuration(CONFIG)
    nodes = [await start_node(name, clock=clock) for name in NODES]
    instances = [await cluster.create_instance(CONFIG, f"cam{i}", list(NODES)) for i in range(3)]
    resources = [CONFIGURATION_RESOURCE, *map(naming.resource_name, instances)]
    for node in nodes:
        await node.until_registered(*resources)
    reclaimers = [
        Reclaimer(
            node.cache,
            node.name,
            node.kubelet.pod_resources_socket,
            allocations=node.allocations,
            metrics=node.metrics,
            grace=1.0,
            clock=clock,
        )
        for node in nodes
    ]
    outcomes: Counter[bool] = Counter()

    for round_ in range(rounds):
        requests = [(rng.choice(resources), rng.choice((1, 1, 2))) for _ in nodes]
        results = await asyncio.gather(
            *(
                admit(node, resource, count)
                for node, (resource, count) in zip(nodes, requests, strict=True)
            )
        )
        outcomes.update(results)
        await check_invariant(cluster, nodes, instances, f"round {round_} {requests}")

        for node in nodes:
            for uid in list(node.kubelet.pods):
                if rng.random() < 0.4:
                    node.kubelet.remove_pod(uid)
        clock.now += 2.0  # past the grace: unused slots are stale now
        for reclaimer in reclaimers:
            await reclaimer.reclaim()  # first sight of the unused ones
        clock.now += 2.0
        await asyncio.gather(*(reclaimer.reclaim() for reclaimer in reclaimers))
        await check_invariant(cluster, nodes, instances, f"after reclaiming in round {round_}")

    assert outcomes[True] > rounds  # the race was real: many pods got slots...
    assert outcomes[False] > 0  # ...and capacity ran out
