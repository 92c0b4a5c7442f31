"""akri on the simulated cluster: real agents, real pods through the scheduler and kubelets.

docs/design.md §5.4's worked example, the Akri #843/#849 cases and the brokers, each checked through
what a user sees: Pods, Node capacity, Instances and Events read back from the API.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from akri import naming
from akri.controller.context import Tuning
from akri.sim.cluster import Cluster
from akri.sim.manifests import pod
from tests.sim.users import User, advertised
from tests.support import eventually

CFG = "cfg"
A = naming.instance_name(CFG, "foo0")  # cfg-8120fe
B = naming.instance_name(CFG, "foo1")  # cfg-a19705


def configuration(unique: bool, *, broker: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "discoveryHandler": {"name": "debugEcho", "discoveryDetails": "descriptions: [foo0, foo1]"},
        "capacity": 2,
        "uniqueDevices": unique,
        "brokerProperties": {"MODE": "test"},
    }
    if broker:
        limits = {naming.PLACEHOLDER: "1"}
        container = {"name": "broker", "image": "nginx", "resources": {"limits": limits}}
        spec["brokerSpec"] = {"brokerPodSpec": {"containers": [container]}}
        spec["instanceServiceSpec"] = {"ports": [{"port": 80}]}
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": CFG, "namespace": "default"},
        "spec": spec,
    }


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(["n", "m"], workdir=socket_dir, agents=True) as running:
        yield running


@pytest.mark.parametrize("unique", [True, False])
async def test_worked_example(cluster: Cluster, unique: bool) -> None:
    user = User(cluster)
    await user.apply(configuration(unique))
    both = {f"akri.sh/{A}": "2", f"akri.sh/{B}": "2", f"akri.sh/{CFG}": "2" if unique else "4"}
    await advertised(user, "n", both)
    await advertised(user, "m", both)

    # P1 on N asks for two devices of the Configuration.
    await user.run(pod("p1", "n", CFG, 2))
    allocations = await user.wait_running("p1")
    env = allocations["app"][naming.resource_name(CFG)]["envs"]
    holders = {**await user.usage(A), **await user.usage(B)}
    assert sorted(holders.values()) == [f"C:{CFG}-0:n", f"C:{CFG}-1:n"]
    if unique:  # one slot of each device, and both devices' properties in the env
        assert set(holders) == {f"{A}-0", f"{B}-0"}
        assert env["DEBUG_ECHO_DESCRIPTION_8120FE"] == "foo0"
        assert env["DEBUG_ECHO_DESCRIPTION_A19705"] == "foo1"
    assert env["MODE"] == "test"

    # P2 on M asks for one slot of A through its instance-level resource.
    await user.run(pod("p2", "m", A, 1))
    await user.wait_running("p2")
    if unique:
        assert await user.usage(A) == {f"{A}-0": f"C:{CFG}-0:n", f"{A}-1": "m"}
        # N's CL plugin keeps its two held ids and offers only B-1 now; A is full.
        await advertised(
            user, "n", {f"akri.sh/{A}": "0", f"akri.sh/{B}": "1", f"akri.sh/{CFG}": "3"}
        )
        # Three distinct devices never fit anywhere: the pod stays Pending, not Failed.
        await user.run(pod("p3", "n", CFG, 3))
        await eventually(
            lambda: _contains(user.reasons("p3"), "FailedScheduling"), "p3 to stay unschedulable"
        )
        assert await user.phase("p3") == "Pending"
    else:
        # Every free slot is its own id: the last free slot is still usable through the CL.
        await user.run(pod("p3", "n", CFG, 1))
        await user.wait_running("p3")
        total = {**await user.usage(A), **await user.usage(B)}
        assert len(total) == 4  # the whole capacity is in use, and never more


async def test_init_container_reoffer_and_replacement_pod_are_admitted(cluster: Cluster) -> None:
    """Akri #843 (re-offered configuration-level ids refused) and #849 (admission errors after
    re-creation)."""
    user = User(cluster)
    await user.apply(configuration(unique=True))
    await advertised(user, "n", {f"akri.sh/{A}": "2", f"akri.sh/{B}": "2", f"akri.sh/{CFG}": "2"})

    await user.run(pod("web", "n", CFG, 2, init=True))
    allocations = await user.wait_running("web")
    ids = allocations["init"][naming.resource_name(CFG)]["ids"]
    assert allocations["app"][naming.resource_name(CFG)]["ids"] == ids  # the kubelet re-offered

    for round_ in range(3):  # a Deployment replacing its pod, again and again
        await user.core.delete_namespaced_pod("web" if round_ == 0 else f"web-{round_}", "default")
        await user.run(pod(f"web-{round_ + 1}", "n", CFG, 2, init=True))
        await user.wait_running(f"web-{round_ + 1}")
        assert "UnexpectedAdmissionError" not in await user.reasons(f"web-{round_ + 1}")


async def test_brokers_run_on_every_node_with_a_slot_each(socket_dir: Path) -> None:
    async with Cluster(["n", "m"], workdir=socket_dir, agents=True, controller=Tuning()) as cluster:
        user = User(cluster)
        await user.apply(configuration(unique=True, broker=True))
        for instance in (A, B):
            for node in ("n", "m"):
                await user.wait_running(naming.broker_pod_name(instance, node, shared=True))
            assert sorted((await user.usage(instance)).values()) == ["m", "n"]
        services = await user.core.list_namespaced_service("default")
        assert {s.metadata.name for s in services.items} >= {f"{A}-svc", f"{B}-svc"}


async def _contains(reasons: Any, wanted: str) -> bool:
    return wanted in await reasons
