"""Plugins follow the kubelet: restarts, deleted sockets, cut streams, late kubelets.

Rules: docs/design.md §6.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field

import pytest

from akri import naming
from akri.agent.plugins.plugin import CONCURRENT_REGISTRATIONS
from akri.backoff import Backoff
from akri.proto.deviceplugin.v1beta1.constants import KUBELET_SOCKET_NAME
from akri.sim.kubelet import Container
from tests.agent.conftest import AgentNode, Cluster, StartNode, configuration, fast_backoff
from tests.kubelet.plugin import FakePlugin
from tests.support import eventually

CONFIG = configuration("cam", capacity=2)
CONFIGURATION_RESOURCE = "akri.sh/cam"


async def serving(cluster: Cluster, node: AgentNode) -> tuple[str, str]:
    """One Instance on `node`; returns its instance-level resource once both plugins are
    registered."""
    name = await cluster.create_instance(CONFIG, "foo0", [node.name])
    resource = naming.resource_name(name)
    await node.until_capacity(resource, 2, 2)
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    await eventually(lambda: node.manager.ready, "the manager to be ready")
    return name, resource


def plugin_sockets(node: AgentNode) -> set[str]:
    return {s.name for s in node.kubelet.device_plugins_dir.glob("*.sock")} - {KUBELET_SOCKET_NAME}


def registered_again(node: AgentNode, *resources: str, times: int = 2) -> bool:
    return all(
        node.kubelet.registrations[r] >= times and r in node.kubelet.registered_resources()
        for r in resources
    )


async def test_kubelet_restart_re_registers_every_plugin_and_pods_keep_their_slots(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    name, resource = await serving(cluster, node)
    pods = [await node.admit(Container("app", {resource: 1}))]
    pods.append(await node.admit(Container("app", {CONFIGURATION_RESOURCE: 1})))
    usage = await cluster.usage(name)
    sockets = {r: p.server.socket for r, p in node.manager.plugins.items() if p.server}

    await node.kubelet.restart()

    await node.until(
        lambda: registered_again(node, resource, CONFIGURATION_RESOURCE),
        "both plugins re-registered",
    )
    await node.until_capacity(
        resource, 2, 1
    )  # the slot held through the configuration level is Unhealthy at the instance level
    await node.until_capacity(
        CONFIGURATION_RESOURCE, 1, 1
    )  # the held id; the Instance has no free slot left
    assert list(node.kubelet.pods.values()) == pods
    assert await cluster.usage(name) == usage
    for r, plugin in node.manager.plugins.items():  # the kubelet deleted the old sockets
        assert plugin.server is not None
        assert plugin.server.socket != sockets[r]
    for pod in pods:  # the node admits pods again; they get the slots the node holds
        assert node.kubelet.remove_pod(pod.spec.uid)
        await node.admit(*pod.spec.containers)
    assert await cluster.usage(name) == usage


async def test_a_deleted_plugin_socket_brings_a_new_incarnation(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    _, resource = await serving(cluster, node)
    server = node.manager.plugins[resource].server
    assert server is not None
    old = server.socket

    old.unlink()

    await node.until(lambda: registered_again(node, resource), "a new registration")
    await node.until_capacity(resource, 2, 2)
    current = node.manager.plugins[resource].server
    assert current is not None
    assert current.socket != old
    assert current.socket.exists()
    assert (
        node.kubelet.registrations[CONFIGURATION_RESOURCE] == 1
    )  # the other plugin was left alone


async def test_a_cut_list_and_watch_stream_brings_a_new_registration(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    _, resource = await serving(cluster, node)
    # Another registration for the resource makes the kubelet close our stream.
    intruder = FakePlugin(node.kubelet.device_plugins_dir, resource)
    try:
        await intruder.start(node.kubelet.socket)

        await node.until(lambda: registered_again(node, resource, times=3), "our registration")
        await node.until_capacity(resource, 2, 2)
        assert node.kubelet.registrations[resource] == 3  # no registration storm
    finally:
        await intruder.stop()
    await node.admit(Container("app", {resource: 1}))


async def test_plugins_wait_for_a_kubelet_that_starts_late(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a", kubelet=False)
    name = await cluster.create_instance(CONFIG, "foo0", [node.name])
    resource = naming.resource_name(name)
    await eventually(lambda: len(node.manager.plugins) == 2, "both plugins to run")
    assert not node.manager.ready

    await node.kubelet.start()

    await node.until_capacity(resource, 2, 2)
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)
    await eventually(lambda: node.manager.ready, "the manager to be ready")
    assert node.kubelet.registrations == {resource: 1, CONFIGURATION_RESOURCE: 1}


@dataclass
class CountedBackoff(Backoff):
    """Counts the retry delays taken, in `taken` (shared by the plugins of a test)."""

    taken: list[float] = field(default_factory=list, kw_only=True)

    def next_delay(self, rng: random.Random | None = None) -> float:
        delay = super().next_delay(rng)
        self.taken.append(delay)
        return delay


async def test_plugins_without_a_kubelet_wait_for_the_watch_to_see_one(
    cluster: Cluster, start_node: StartNode, caplog: pytest.LogCaptureFixture
) -> None:
    """Not for a retry delay: a thousand plugins retrying on theirs while a kubelet restarts
    took three registration turns each for nothing. Their longest delay here is an hour."""
    caplog.set_level(logging.DEBUG, "akri.agent.plugins.plugin")
    taken: list[float] = []
    initial = fast_backoff().initial
    cluster.set_configuration(CONFIG)
    node = await start_node(
        "node-a",
        kubelet=False,
        register_backoff=lambda: CountedBackoff(initial, maximum=3600.0, taken=taken),
    )
    name = await cluster.create_instance(CONFIG, "foo0", [node.name])
    resource = naming.resource_name(name)

    def waiting() -> set[str]:
        return {r.getMessage().split(":")[0] for r in caplog.records if "waiting for" in r.message}

    await eventually(lambda: len(waiting()) == 2, "both plugins to find no kubelet")
    assert taken == []
    assert plugin_sockets(node) == set(), "served with no kubelet to call them"
    await node.kubelet.start()

    await node.until_capacity(resource, 2, 2)
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)


async def test_plugins_come_back_after_a_kubelet_outage(
    cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    _, resource = await serving(cluster, node)

    await node.kubelet.stop()
    await eventually(lambda: not node.manager.ready, "the manager to notice")
    # A kubelet that starts deletes them: stopped while none serves, not while many register.
    await eventually(lambda: plugin_sockets(node) == set(), "the plugins to stop serving")
    await node.kubelet.start()

    await node.until(
        lambda: registered_again(node, resource, CONFIGURATION_RESOURCE),
        "both plugins re-registered",
    )
    await eventually(lambda: node.manager.ready, "the manager to be ready again")


async def test_a_restarted_agent_registers_again_and_pods_keep_their_slots(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Akri #558: registrations must not be lost when the agent restarts."""
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    name, resource = await serving(cluster, node)
    pod = await node.admit(Container("app", {resource: 1}))
    usage = await cluster.usage(name)

    await node.restart_agent()

    await node.until(
        lambda: registered_again(node, resource, CONFIGURATION_RESOURCE),
        "both plugins re-registered",
    )
    await eventually(lambda: node.manager.ready, "the new agent to be ready")
    assert node.kubelet.pods[pod.spec.uid] == pod
    assert await cluster.usage(name) == usage
    await node.admit(Container("app", {resource: 1}))  # the other slot


async def test_a_kubelet_restart_registers_each_of_many_plugins_exactly_once_more(
    cluster: Cluster, start_node: StartNode
) -> None:
    """More plugins than register at once: each gets one new incarnation and one new
    registration, and no old server is left serving."""
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a")
    names = [
        await cluster.create_instance(CONFIG, f"dev{i}", [node.name])
        for i in range(2 * CONCURRENT_REGISTRATIONS + 3)
    ]
    resources = [naming.resource_name(name) for name in names] + [CONFIGURATION_RESOURCE]
    await eventually(lambda: node.manager.ready, "every plugin registered")
    assert all(node.kubelet.registrations[r] == 1 for r in resources)

    await node.kubelet.restart()

    await node.until(lambda: registered_again(node, *resources), "every plugin re-registered")
    await eventually(lambda: node.manager.ready, "the manager to be ready again")
    assert {r: node.kubelet.registrations[r] for r in resources} == dict.fromkeys(resources, 2)
    current = {p.server.name for p in node.manager.plugins.values() if p.server is not None}
    assert len(current) == len(resources)
    await eventually(lambda: plugin_sockets(node) == current, "only the new incarnations' sockets")
