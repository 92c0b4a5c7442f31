"""Device-plugin mode on the real rig: the agents' plugins registered with the real kubelet
device managers of two nodes, pods admitted by them, and the slots each holds read back from
the Instances' deviceUsage and the kubelets' PodResources, never from our logs."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest

from akri import naming
from tests.e2e.conftest import Akri
from tests.e2e.kube import configuration, holder_node, pod, pod_resources
from tests.e2e.rig import NODES
from tests.support import eventually

pytestmark = pytest.mark.timeout(300)
DEADLINE_S = 120.0  # a kubelet reports allocatable changes within its 10 s status period
NODE_LOSS_DEADLINE_S = 240.0  # NotReady after 30 s, the controller's grace, a loaded host
BOTH = sorted(NODES)
NODE_A, NODE_B = BOTH


def new_name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:4]}"


async def discovered(akri: Akri, cfg: str, *, shared: bool) -> list[str]:
    """The Configuration's Instances once every agent reported its devices."""
    if shared:
        wanted = {naming.instance_name(cfg, d): BOTH for d in ("foo0", "foo1")}
    else:
        wanted = {naming.instance_name(cfg, d, n): [n] for d in ("foo0", "foo1") for n in NODES}

    async def found() -> bool:
        return await akri.kube.instance_nodes() == wanted

    await eventually(found, f"the Instances {sorted(wanted)}", DEADLINE_S)
    return sorted(wanted)


async def allocatable_is(akri: Akri, counts: dict[tuple[str, str], int]) -> None:
    """Wait until each (node, resource) has that many healthy devices in node allocatable."""

    async def matches() -> bool:
        for (node, resource), count in counts.items():
            if await akri.kube.allocatable(node, resource) != count:
                return False
        return True

    await eventually(matches, f"node allocatable {counts}", DEADLINE_S)


async def in_use(akri: Akri) -> set[tuple[str, str, str]]:
    """(node, resource, device id) of every container of the test's pods, as the kubelets'
    PodResources report them."""
    found = set()
    for node in NODES:
        listed = await pod_resources(akri.rig.nodes[node].pod_resources_socket)
        for key, resources in listed.items():
            if key.startswith(f"{akri.namespace}/"):
                found |= {
                    (node, resource, device)
                    for resource, devices in resources["devices"].items()
                    for device in devices
                }
    return found


async def recorded(akri: Akri, cfg: str) -> set[tuple[str, str, str]]:
    """The same triples as Instances' deviceUsage records them: an instance-level slot as the
    slot id itself, a configuration-level slot as its virtual device."""
    found = set()
    for slot, holder in (await akri.kube.holders()).items():
        if holder.startswith("C:"):
            _, vdev, node = holder.split(":")
            found.add((node, naming.resource_name(cfg), vdev))
        else:
            instance = slot.rsplit("-", 1)[0]
            found.add((holder, naming.resource_name(instance), slot))
    return found


async def accounted(akri: Akri, cfg: str, holders: int) -> None:
    """Wait until exactly `holders` slots are held and each is one a container uses."""

    async def agree() -> bool:
        record = await recorded(akri, cfg)
        return len(record) == holders and record == await in_use(akri)

    await eventually(agree, f"{holders} held slots, each used by a container", DEADLINE_S)


async def all_running(akri: Akri, names: list[str]) -> None:
    await eventually(lambda: akri.kube.running(names), f"pods {names} Running", DEADLINE_S)


async def stays_pending(akri: Akri, name: str) -> None:
    await eventually(lambda: akri.kube.unschedulable(name), f"pod {name} Unschedulable", DEADLINE_S)


async def test_shared_devices_offer_both_plugin_levels_on_both_nodes(akri: Akri) -> None:
    """Slots taken through one node's Instance-level plugin leave the other node's plugins
    at once (as far as the kubelets are concerned): both levels draw on one pool."""
    await akri.start(shared=True)
    cfg = await akri.apply(configuration(new_name("dp")))
    foo0, foo1 = await discovered(akri, cfg, shared=True)
    await allocatable_is(akri, {(n, r): 2 for n in NODES for r in (foo0, foo1, cfg)})

    await akri.kube.create_pod(pod("il-a", foo0, 2, node=NODE_A))
    await all_running(akri, ["il-a"])
    await accounted(akri, cfg, 2)
    assert await akri.kube.holders() == {f"{foo0}-0": NODE_A, f"{foo0}-1": NODE_A}
    await allocatable_is(akri, {(NODE_B, foo0): 0, (NODE_B, cfg): 1, (NODE_B, foo1): 2})

    await akri.kube.create_pod(pod("il-b", foo0, 1, node=NODE_B))
    await stays_pending(akri, "il-b")
    await akri.kube.create_pod(pod("cl-b", cfg, 1, node=NODE_B))
    await all_running(akri, ["cl-b"])
    await accounted(akri, cfg, 3)
    held_by_b = {s: h for s, h in (await akri.kube.holders()).items() if holder_node(h) == NODE_B}
    ((slot, holder),) = held_by_b.items()
    assert slot.startswith(f"{foo1}-")
    assert holder.startswith(f"C:{cfg}-")
    assert await akri.kube.unschedulable("il-b")


@pytest.mark.parametrize(
    ("shared", "unique"),
    [(True, True), (True, False), (False, True)],
    ids=["shared-unique", "shared-not-unique", "local-unique"],
)
async def test_capacity_reached_leaves_a_pod_pending_until_a_slot_is_freed(
    akri: Akri, shared: bool, unique: bool
) -> None:
    """Two devices of capacity 2 (seen by both nodes, or local to node-a): four pods asking
    `akri.sh/<configuration>: 1` run, a fifth stays Pending, and takes the slot a deleted
    pod frees."""
    await akri.start(shared=shared)
    cfg = await akri.apply(configuration(new_name("cap"), unique=unique))
    await discovered(akri, cfg, shared=shared)
    node = None if shared else NODE_A
    nodes = NODES if shared else [NODE_A]
    await allocatable_is(akri, {(n, cfg): 2 if unique else 4 for n in nodes})

    first = [f"p{i}" for i in range(4)]
    for name in first:
        await akri.kube.create_pod(pod(name, cfg, node=node))
    await all_running(akri, first)
    await accounted(akri, cfg, 4)
    # Every node now offers exactly the slots it holds: nothing is left for a fifth pod.
    held = await recorded(akri, cfg)
    await allocatable_is(akri, {(n, cfg): sum(h[0] == n for h in held) for n in nodes})
    await akri.kube.create_pod(pod("p4", cfg, node=node))
    await stays_pending(akri, "p4")
    await accounted(akri, cfg, 4)

    await akri.kube.delete_pod("p0")
    await all_running(akri, ["p4", *first[1:]])
    await accounted(akri, cfg, 4)


async def restart_kubelet(akri: Akri, cfg: str) -> None:
    await akri.rig.restart_kubelet(NODE_A)
    await eventually(lambda: akri.kube.ready(NODE_A), "node-a Ready again", DEADLINE_S)


async def kill_and_restart_agent(akri: Akri, cfg: str) -> None:
    agent = akri.agents[NODE_A]
    await agent.kill()
    # A pod admitted while no plugin serves fails admission (the device-plugin API's way):
    # the new agent starts once the kubelet saw the old one's plugins go.
    await allocatable_is(akri, {(NODE_A, cfg): 0})
    await agent.start()


@pytest.mark.parametrize(
    "disruption",
    [restart_kubelet, kill_and_restart_agent],
    ids=["kubelet-restart", "agent-kill-9"],
)
async def test_slots_are_kept_and_plugins_serve_again_after(
    akri: Akri, disruption: Callable[[Akri, str], Awaitable[None]]
) -> None:
    """A running pod keeps its slot, and a new pod is admitted through the plugins the
    agent registers again (with the new kubelet, or as a new agent)."""
    await akri.start(shared=True)
    cfg = await akri.apply(configuration(new_name("dis")))
    await discovered(akri, cfg, shared=True)
    await allocatable_is(akri, {(NODE_A, cfg): 2})
    await akri.kube.create_pod(pod("before", cfg, node=NODE_A))
    await all_running(akri, ["before"])
    await accounted(akri, cfg, 1)
    kept = await akri.kube.holders()
    offered = 3  # the virtual device node-a holds, and one for each device with a free slot
    await allocatable_is(akri, {(NODE_A, cfg): offered})

    await disruption(akri, cfg)
    await allocatable_is(akri, {(NODE_A, cfg): offered})
    await akri.kube.create_pod(pod("after", cfg, node=NODE_A))
    await all_running(akri, ["before", "after"])
    await accounted(akri, cfg, 2)
    assert kept.items() <= (await akri.kube.holders()).items()


async def test_the_controller_deploys_a_broker_per_instance_and_node(akri: Akri) -> None:
    await akri.start(shared=True)
    cfg = await akri.apply(configuration(new_name("brk"), broker=True))
    instances = await discovered(akri, cfg, shared=True)
    brokers = [naming.broker_pod_name(i, n, shared=True) for i in instances for n in NODES]
    await all_running(akri, brokers)
    await accounted(akri, cfg, 4)
    holders = await akri.kube.holders()
    for instance in instances:
        assert sorted(h for s, h in holders.items() if s.startswith(f"{instance}-")) == BOTH


@pytest.mark.timeout(600)
async def test_a_lost_node_gives_its_slots_back_and_rejoins_when_it_returns(
    akri: Akri,
) -> None:
    """One device of capacity 1 held by a pod on node-b: a pod on node-a waits for it, and
    gets it once node-b is powered off and the controller frees node-b's slots."""
    await akri.start(shared=True)
    cfg = await akri.apply(configuration(new_name("lost"), capacity=1, descriptions=("foo0",)))
    instance = naming.instance_name(cfg, "foo0")

    async def nodes_are(nodes: list[str]) -> bool:
        return await akri.kube.instance_nodes() == {instance: nodes}

    await eventually(lambda: nodes_are(BOTH), "the Instance on both nodes", DEADLINE_S)
    await allocatable_is(akri, {(NODE_B, cfg): 1})
    await akri.kube.create_pod(pod("on-b", cfg, node=NODE_B))
    await all_running(akri, ["on-b"])
    await accounted(akri, cfg, 1)
    await allocatable_is(akri, {(NODE_A, cfg): 0})
    await akri.kube.create_pod(pod("on-a", cfg, node=NODE_A))
    await stays_pending(akri, "on-a")

    await akri.rig.stop_node(NODE_B)
    try:
        await eventually(lambda: nodes_are([NODE_A]), "node-b out", NODE_LOSS_DEADLINE_S)
        await all_running(akri, ["on-a"])
        assert [holder_node(h) for h in (await akri.kube.holders()).values()] == [NODE_A]
        await akri.kube.delete_pod("on-b")  # gone from the API at once: its node is off
    finally:
        await akri.rig.start_nodes()
    await eventually(lambda: akri.kube.ready(NODE_B), "node-b Ready again", NODE_LOSS_DEADLINE_S)
    await eventually(lambda: nodes_are(BOTH), "node-b back in the Instance", DEADLINE_S)
    await accounted(akri, cfg, 1)
