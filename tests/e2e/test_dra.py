"""DRA mode on the real rig: the agents' kubelet DRA plugins registered with the real kubelets'
DRA managers, the real scheduler allocating the claims it makes for pods that ask
`akri.sh/<configuration>: N` (the DeviceClass's extendedResourceName), NodePrepareResources
and NodeUnprepareResources called by the kubelets. Slots are read from the ResourceClaims'
allocations, the kubelets' PodResources and the CDI specs the runtime would read."""

from __future__ import annotations

import uuid

import pytest

from akri.agent.dra.cdi import spec_file_name
from akri.dra.devices import DRIVER
from akri.dra.mode import Mode
from tests.e2e import programs
from tests.e2e.conftest import Akri
from tests.e2e.kube import configuration, device_uses, pod, pod_resources
from tests.e2e.rig import NODES
from tests.support import eventually

pytestmark = pytest.mark.timeout(300)
DEADLINE_S = 120.0
NODE_A = sorted(NODES)[0]


def new_name(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:4]}"


async def published(akri: Akri, cfg: str, devices: int) -> None:
    """Wait until the Configuration's slices list `devices` devices in all."""

    async def listed() -> bool:
        slices = await akri.kube.slices(cfg)
        return sum(len(s["spec"].get("devices") or []) for s in slices) == devices

    await eventually(listed, f"{devices} devices of {cfg} in ResourceSlices", DEADLINE_S)


async def prepared(akri: Akri) -> dict[str, tuple[str, str, list[str]]]:
    """Each claim a kubelet prepared for a container of the test's pods: claim name ->
    (node, pod, CDI device names), from the kubelets' PodResources."""
    found = {}
    for node in NODES:
        listed = await pod_resources(akri.rig.nodes[node].pod_resources_socket)
        for key, resources in listed.items():
            namespace, name = key.split("/")
            if namespace == akri.namespace:
                for claim, devices in resources["claims"].items():
                    found[claim] = (node, name, devices)
    return found


def cdi_specs(akri: Akri) -> set[str]:
    """The CDI spec files the agents wrote, on any node (one per prepared claim)."""
    return {
        spec.name
        for node in NODES
        for spec in programs.cdi_dir(akri.workdir, node).glob(f"{DRIVER}-*.json")
    }


async def accounted(akri: Akri, pods: list[str], capacity: int) -> None:
    """Wait until every pod in `pods` runs with one allocated claim that its node prepared
    (PodResources lists its CDI devices, a CDI spec exists), and no device is allocated more
    than `capacity` times; nothing else is allocated or prepared."""

    async def agree() -> bool:
        if not await akri.kube.running(pods):
            return False
        allocations = await akri.kube.allocations()
        ready = await prepared(akri)
        claims = {c["metadata"]["name"]: c for c in await akri.kube.claims()}
        owners = {
            name: owner["name"]
            for name, claim in claims.items()
            for owner in claim["metadata"].get("ownerReferences") or []
            if owner["kind"] == "Pod"
        }
        specs = {spec_file_name(claims[c]["metadata"]["uid"]) for c in allocations if c in claims}
        return (
            sorted(owners[c] for c in allocations if c in owners) == sorted(pods)
            and ready.keys() == allocations.keys()
            and all(ready[c][1] == owners.get(c) and ready[c][2] for c in ready)
            and max(device_uses(allocations).values(), default=0) <= capacity
            and cdi_specs(akri) == specs
        )

    await eventually(agree, f"pods {pods} running on prepared claims", DEADLINE_S)


@pytest.mark.parametrize(
    ("shared", "unique"),
    [(False, True), (False, False), (True, True), (True, False)],
    ids=["local-unique", "local-not-unique", "shared-unique", "shared-not-unique"],
)
async def test_capacity_reached_leaves_a_pod_pending_until_a_slot_is_freed(
    akri: Akri, shared: bool, unique: bool
) -> None:
    """Two devices of capacity 2 (seen by both nodes, or local to node-a): exactly four pods
    asking `akri.sh/<configuration>: 1` run, each on a claim its kubelet prepared; a fifth
    stays Pending; a deleted pod's claim is unprepared and its slot serves the fifth."""
    await akri.start(mode=Mode.DRA, shared=shared)
    cfg = await akri.apply(configuration(new_name("dra"), unique=unique))
    devices_per_node = 2 if unique else 4
    await published(akri, cfg, devices_per_node if shared else devices_per_node * len(NODES))
    node = None if shared else NODE_A

    first = [f"p{i}" for i in range(4)]
    for name in first:
        await akri.kube.create_pod(pod(name, cfg, node=node))
    await accounted(akri, first, capacity=2)
    await akri.kube.create_pod(pod("p4", cfg, node=node))
    await eventually(lambda: akri.kube.unschedulable("p4"), "p4 Unschedulable", DEADLINE_S)
    await accounted(akri, first, capacity=2)

    freed = [c for c, (_, owner, _) in (await prepared(akri)).items() if owner == "p0"]
    assert len(freed) == 1
    await akri.kube.delete_pod("p0")
    await accounted(akri, [*first[1:], "p4"], capacity=2)


async def test_a_kubelet_restart_keeps_prepared_claims_and_the_plugin_registers_again(
    akri: Akri,
) -> None:
    await akri.start(mode=Mode.DRA, shared=False)
    cfg = await akri.apply(configuration(new_name("drk")))
    await published(akri, cfg, 2 * len(NODES))
    await akri.kube.create_pod(pod("before", cfg, node=NODE_A))
    await accounted(akri, ["before"], capacity=2)
    kept = await akri.kube.allocations()

    await akri.rig.restart_kubelet(NODE_A)
    await eventually(lambda: akri.kube.ready(NODE_A), "node-a Ready again", DEADLINE_S)
    # A new pod's claim needs the agent's plugin registered with the new kubelet.
    await akri.kube.create_pod(pod("after", cfg, node=NODE_A))
    await accounted(akri, ["before", "after"], capacity=2)
    assert kept.items() <= (await akri.kube.allocations()).items()
    # Unprepare after the restart: the old pod's claim goes, its CDI spec with it.
    await akri.kube.delete_pod("before")
    await accounted(akri, ["after"], capacity=2)
