"""The plugin manager runs exactly the plugins the node's Instances and Configurations call for."""

from __future__ import annotations

import asyncio
import logging

import pytest

from akri import naming
from akri.sim.kubelet import Container
from tests.agent.conftest import AgentNode, Cluster, StartNode, configuration
from tests.support import eventually

CONFIG = configuration("cam", capacity=2)
CONFIGURATION_RESOURCE = "akri.sh/cam"


def served(node: AgentNode) -> set[str]:
    return node.kubelet.registered_resources()


def plugin_sockets(node: AgentNode) -> list[str]:
    return sorted(p.name for p in node.kubelet.device_plugins_dir.glob("akri.sh-*.sock"))


async def test_plugins_follow_instances_and_configurations(
    cluster: Cluster, start_node: StartNode
) -> None:
    node = await start_node("node-a")
    first = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    second = await cluster.create_instance(CONFIG, "foo1", ["node-a"])
    first_instance_resource, second_instance_resource = (
        naming.resource_name(first),
        naming.resource_name(second),
    )
    await eventually(lambda: node.manager.ready, "the manager to settle")
    assert node.manager.plugins == {}  # the Configuration is not known yet

    cluster.set_configuration(CONFIG)
    await node.until(
        lambda: (
            served(node)
            == {CONFIGURATION_RESOURCE, first_instance_resource, second_instance_resource}
        ),
        "three plugins",
    )
    await node.until_capacity(CONFIGURATION_RESOURCE, 2, 2)

    await cluster.delete_instance(first)
    await node.until(
        lambda: served(node) == {CONFIGURATION_RESOURCE, second_instance_resource},
        "the first instance-level plugin gone",
    )
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    await eventually(lambda: len(plugin_sockets(node)) == 2, "its socket removed")

    cluster.delete_configuration("cam")
    await node.until(lambda: served(node) == set(), "every plugin gone")
    await eventually(lambda: plugin_sockets(node) == [], "every socket removed")
    await eventually(lambda: node.manager.ready, "ready: nothing is wanted, nothing runs")


async def test_a_uniqueness_change_replaces_the_configuration_plugin(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    for device in ("foo0", "foo1"):
        await cluster.create_instance(CONFIG, device, ["node-a"])
    await node.until_capacity(CONFIGURATION_RESOURCE, 2, 2)

    cluster.set_configuration(configuration("cam", capacity=2, unique=False))

    await node.until_capacity(CONFIGURATION_RESOURCE, 4, 4)
    assert node.kubelet.registrations[CONFIGURATION_RESOURCE] == 2
    pod = await node.admit(Container("app", {CONFIGURATION_RESOURCE: 4}))
    assert len(pod.ids("app", CONFIGURATION_RESOURCE)) == 4


async def test_configuration_properties_change_without_a_restart(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    resource = naming.resource_name(name)
    await node.until_capacity(resource, 2, 2)

    cluster.set_configuration(configuration("cam", capacity=2, properties={"LEVEL": "2"}))
    pod = await node.admit(Container("app", {resource: 1}))

    assert pod.allocations["app"][resource].response.envs["LEVEL"] == "2"
    assert node.kubelet.registrations[resource] == 1


async def test_a_corrupt_slot_is_logged_once_and_never_offered(
    cluster: Cluster, start_node: StartNode, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    resource = naming.resource_name(name)
    await node.until_capacity(resource, 2, 2)
    caplog.set_level(logging.WARNING)

    slot = naming.slot_id(name, 1)
    await cluster.change_instance(name, device_usage={naming.slot_id(name, 0): "", slot: "x:y"})
    await node.until_capacity(resource, 2, 1)
    await cluster.change_instance(name, broker_properties={"A": "1"})  # another change
    await node.admit(Container("app", {resource: 1}))

    corrupt = [r for r in caplog.records if "corrupt" in r.getMessage()]
    assert len(corrupt) == 1
    assert slot in corrupt[0].getMessage()
    assert (await cluster.usage(name))[slot] == "x:y"


@pytest.mark.parametrize("steps", range(8))
async def test_an_agent_stopped_while_its_plugins_stop_leaves_no_server_behind(
    cluster: Cluster, start_node: StartNode, steps: int
) -> None:
    """The agent stops `steps` turns of the event loop after the manager began stopping every
    plugin: stopped twice in a row, each plugin still stops its server and removes its socket."""
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    for device in ("foo0", "foo1"):
        await cluster.create_instance(CONFIG, device, ["node-a"])
    await eventually(lambda: len(plugin_sockets(node)) == 3, "three plugins served")
    await eventually(lambda: node.manager.ready, "every plugin registered")

    cluster.delete_configuration("cam")
    for _ in range(steps):
        await asyncio.sleep(0)  # one turn of the loop: the second stop lands at each step
    await node.agent.stop()

    assert plugin_sockets(node) == []
