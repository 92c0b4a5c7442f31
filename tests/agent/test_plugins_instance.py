"""The instance-level plugin against the kubelet emulator and the API emulator.

Rules: docs/design.md §5.2.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest

from akri import naming
from akri.sim.kubelet import UNEXPECTED_ADMISSION_ERROR, AdmissionError, Container
from tests.agent.conftest import AgentNode, Cluster, StartNode, allocate_error, configuration
from tests.support import eventually

CONFIG = configuration("cam", capacity=2, properties={"STREAM": "rtsp"})
DIRECTORY_BYTES = 54
"""A device-plugins directory longer than the kubelet's own (31 bytes)."""


async def shared_by_two_nodes(
    cluster: Cluster, start_node: StartNode, capacity: int
) -> tuple[str, str, AgentNode, AgentNode]:
    """An Instance of CONFIG seen by node-a and node-b, both listing every slot: its name,
    its resource and the two nodes."""
    cluster.set_configuration(CONFIG)
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a", "node-b"], capacity=capacity)
    resource = naming.resource_name(name)
    a, b = await start_node("node-a"), await start_node("node-b")
    await a.until_capacity(resource, capacity, capacity)
    await b.until_capacity(resource, capacity, capacity)
    return name, resource, a, b


async def test_slots_are_advertised_claimed_and_seen_taken_by_the_other_node(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    name = await cluster.create_instance(
        CONFIG, "foo0", ["node-a", "node-b"], properties={"IP": "1"}
    )
    resource = naming.resource_name(name)
    a, b = await start_node("node-a"), await start_node("node-b")
    await a.until_capacity(resource, 2, 2)
    await b.until_capacity(resource, 2, 2)

    pod = await a.admit(Container("app", {resource: 1}))

    (slot,) = pod.ids("app", resource)
    assert (await cluster.usage(name))[slot] == "node-a"
    suffix = naming.instance_digest(name).upper()
    assert dict(pod.allocations["app"][resource].response.envs) == {
        f"IP_{suffix}": "1",
        f"STREAM_{suffix}": "rtsp",
        "IP": "1",
        "STREAM": "rtsp",
    }
    await b.until(
        lambda: b.kubelet.resources()[resource].unhealthy_ids == {slot}, "the slot Unhealthy on b"
    )
    await a.until_capacity(resource, 2, 2)  # the holder still sees its slot Healthy


async def test_a_slot_taken_elsewhere_is_refused_with_a_clear_message(
    cluster: Cluster, start_node: StartNode
) -> None:
    name, resource, a, b = await shared_by_two_nodes(cluster, start_node, 1)
    await a.admit(Container("app", {resource: 1}))
    slot = naming.slot_id(name, 0)

    # As a kubelet with a stale view would: ask node-b's plugin for the slot node-a holds.
    code, message = await allocate_error(b, resource, [slot])

    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert f"slot {slot} is held by node node-a" in message
    assert await cluster.usage(name) == {slot: "node-a"}
    await b.until(lambda: b.kubelet.allocatable()[resource] == 0, "b sees the slot taken")
    with pytest.raises(AdmissionError) as refused:
        await b.admit(Container("app", {resource: 1}))
    assert refused.value.reason == UNEXPECTED_ADMISSION_ERROR  # the kubelet's own refusal
    assert await cluster.usage(name) == {slot: "node-a"}


async def test_each_kubelet_is_steered_to_its_nodes_own_share_of_the_slots(
    cluster: Cluster, start_node: StartNode
) -> None:
    name, resource, a, b = await shared_by_two_nodes(cluster, start_node, 4)

    # Both kubelets choose while every slot looks free to them: the lowest id for both would
    # make one Allocate fail; each node's preference keeps them apart.
    admitted = await asyncio.gather(
        a.admit(Container("app", {resource: 1})),
        b.admit(Container("app", {resource: 1})),
        return_exceptions=True,
    )

    assert [p if isinstance(p, BaseException) else p.ids("app", resource) for p in admitted] == [
        (naming.slot_id(name, 0),),
        (naming.slot_id(name, 2),),
    ]
    assert await cluster.usage(name) == {
        naming.slot_id(name, 0): "node-a",
        naming.slot_id(name, 1): "",
        naming.slot_id(name, 2): "node-b",
        naming.slot_id(name, 3): "",
    }


async def test_capacity_changes_show_in_list_and_watch_without_over_allocation(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    resource = naming.resource_name(name)
    a = await start_node("node-a")
    await a.until_capacity(resource, 2, 2)
    await a.admit(Container("app", {resource: 1}))
    await a.until_capacity(resource, 2, 2)

    await cluster.change_instance(name, capacity=3)
    await a.until_capacity(resource, 3, 3)
    await a.admit(Container("app", {resource: 2}))
    assert sorted((await cluster.usage(name)).values()) == ["node-a"] * 3

    await cluster.change_instance(name, capacity=1)
    await a.until_capacity(resource, 1, 0)  # 3 held over capacity 1: none for a new container
    with pytest.raises(AdmissionError):
        await a.admit(Container("app", {resource: 1}))  # the kubelet has no free device left
    assert len(a.ids(resource)) == 3  # running pods keep what they got
    assert sorted((await cluster.usage(name)).values()) == ["node-a"] * 3


async def test_device_extras_and_configuration_properties_reach_the_container(
    cluster: Cluster, start_node: StartNode
) -> None:
    config = configuration("cam", properties={"MODE": "config", "bad-key": "x"})
    cluster.set_configuration(config)
    name = await cluster.create_instance(config, "foo0", ["node-a"], properties={"MODE": "device"})
    resource = naming.resource_name(name)
    a = await start_node("node-a")
    await a.until_capacity(resource, 2, 2)

    pod = await a.admit(Container("app", {resource: 1}))

    envs = dict(pod.allocations["app"][resource].response.envs)
    assert envs["MODE"] == "config"  # the Configuration's brokerProperties win
    assert not any(key.startswith("bad") for key in envs)


async def test_an_instance_that_leaves_the_node_loses_its_plugin(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    resource = naming.resource_name(name)
    a = await start_node("node-a")
    await a.until_capacity(resource, 2, 2)

    await cluster.change_instance(name, nodes=["node-b"])

    await a.until(lambda: resource not in a.kubelet.registered_resources(), "plugin stopped")
    await eventually(lambda: resource not in a.manager.plugins, "the manager to forget it")
    assert not list(a.kubelet.device_plugins_dir.glob("akri.sh-cam-*.sock"))


def sends(node: AgentNode, level: str) -> float:
    """Lists this node's plugins of `level` sent, by the node's own metrics."""
    found = node.metrics.registry.get_sample_value(
        "akri_list_and_watch_sends_total", {"level": level}
    )
    return found or 0.0


async def test_lists_are_sent_only_when_they_change(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    resource = naming.resource_name(name)
    a = await start_node("node-a")
    await a.until_capacity(resource, 2, 2)
    await a.until_capacity("akri.sh/cam", 1, 1)
    assert (sends(a, "instance"), sends(a, "configuration")) == (1, 1)

    await cluster.change_instance(name, broker_properties={"NEW": "1"})  # same slots
    await cluster.change_instance(
        name, capacity=3
    )  # one more slot; still one configuration-level id
    await a.until_capacity(resource, 3, 3)

    assert (sends(a, "instance"), sends(a, "configuration")) == (2, 1)


def granted(node: AgentNode) -> float:
    """Instance-level Allocates this node granted, by the node's own metrics."""
    found = node.metrics.registry.get_sample_value(
        "akri_allocations_total", {"level": "instance", "result": "granted"}
    )
    return found or 0.0


async def test_each_agent_counts_only_its_own_allocations(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Agents sharing a process (the simulator's nodes) keep their own metrics."""
    _, resource, a, b = await shared_by_two_nodes(cluster, start_node, capacity=2)

    await a.admit(Container("app", {resource: 1}))

    assert (granted(a), granted(b)) == (1, 0)


async def test_the_longest_names_are_served_under_a_long_device_plugins_directory(
    cluster: Cluster, start_node: StartNode, socket_dir: Path
) -> None:
    """Issue 16: socket paths grpc refused (106, 107 bytes) kept long resources unregistered."""
    padding = DIRECTORY_BYTES - len(str(socket_dir / "n" / "dp"))
    node = "n" + "x" * padding  # its device-plugins directory: socket_dir/<node>/dp
    longest = configuration("c" * (naming.MAX_RESOURCE_NAME_PART - 7), capacity=1)
    cluster.set_configuration(longest)
    name = await cluster.create_instance(longest, "foo0", [node], capacity=1)
    assert len(name) == naming.MAX_RESOURCE_NAME_PART

    a = await start_node(node)

    assert len(str(a.kubelet.device_plugins_dir)) == DIRECTORY_BYTES
    await a.until_capacity(naming.resource_name(name), 1, 1)
    await a.until_capacity(naming.resource_name(longest.metadata.name or ""), 1, 1)
