"""The configuration-level plugin against the kubelet and API emulators.

Rules: docs/design.md §5.3, §5.4.
"""

from __future__ import annotations

import grpc
import pytest

from akri import naming
from akri.sim.kubelet import AdmissionError, Container
from tests.agent.conftest import (
    AgentNode,
    Cluster,
    StartNode,
    allocate,
    allocate_error,
    configuration,
)

N, M = "node-n", "node-m"


async def two_instances(
    cluster: Cluster, start_node: StartNode, *, unique: bool
) -> tuple[str, str, AgentNode, AgentNode]:
    """The worked example's setup: Instances A and B, capacity 2, seen by nodes N and M."""
    config = configuration("cfg", capacity=2, unique=unique, properties={"SITE": "lab"})
    cluster.set_configuration(config)
    a = await cluster.create_instance(config, "foo0", [N, M], properties={"URL": "a"})
    b = await cluster.create_instance(config, "foo1", [N, M], properties={"URL": "b"})
    return a, b, await start_node(N), await start_node(M)


def holders(usage: dict[str, str]) -> list[str]:
    return sorted(value for value in usage.values() if value)


async def test_worked_example_unique_devices(cluster: Cluster, start_node: StartNode) -> None:
    a, b, n, m = await two_instances(cluster, start_node, unique=True)
    configuration_resource, instance_resource_a, instance_resource_b = (
        "akri.sh/cfg",
        naming.resource_name(a),
        naming.resource_name(b),
    )
    for node in (n, m):
        await node.until_capacity(instance_resource_a, 2, 2)
        await node.until_capacity(instance_resource_b, 2, 2)
        await node.until_capacity(configuration_resource, 2, 2)  # one id per Instance
    with pytest.raises(AdmissionError, match="unavailable"):
        await m.admit(
            Container("app", {configuration_resource: 3})
        )  # three distinct devices never fit

    p1 = await n.admit(Container("app", {configuration_resource: 2}))

    ids = p1.ids("app", configuration_resource)
    usage_a, usage_b = await cluster.usage(a), await cluster.usage(b)
    assert {v for v in usage_a.values() if v} | {v for v in usage_b.values() if v} == {
        f"C:{device}:{N}" for device in ids
    }
    assert len(holders(usage_a)) == len(holders(usage_b)) == 1  # distinct devices
    envs = dict(p1.allocations["app"][configuration_resource].response.envs)
    for instance, url in ((a, "a"), (b, "b")):  # every device's env, not only the first one's
        assert envs[naming.property_env_name("URL", instance)] == url
    assert "URL" not in envs  # two devices: no plain device property
    assert envs["SITE"] == "lab"
    await n.until_capacity(
        configuration_resource, 4, 4
    )  # the two held ids plus one new id per Instance
    for node in (n, m):
        await node.until_capacity(instance_resource_a, 2, 1)
        await node.until_capacity(instance_resource_b, 2, 1)

    p2 = await m.admit(Container("app", {instance_resource_a: 1}))

    (slot,) = p2.ids("app", instance_resource_a)
    assert (await cluster.usage(a))[slot] == M
    await n.until_capacity(
        configuration_resource, 3, 3
    )  # N's id for A is gone, B can still be offered
    before = [await cluster.usage(a), await cluster.usage(b)]
    for node in (n, m):
        with pytest.raises(AdmissionError, match="unavailable"):
            await node.admit(
                Container("app", {configuration_resource: 3})
            )  # at most one new id per free device
    assert [await cluster.usage(a), await cluster.usage(b)] == before


async def test_without_unique_devices_the_whole_capacity_is_offered(
    cluster: Cluster, start_node: StartNode
) -> None:
    a, b, n, _ = await two_instances(cluster, start_node, unique=False)
    configuration_resource = "akri.sh/cfg"
    await n.until_capacity(configuration_resource, 4, 4)

    pod = await n.admit(Container("app", {configuration_resource: 3}))

    usage = {**await cluster.usage(a), **await cluster.usage(b)}
    assert holders(usage) == sorted(
        f"C:{device}:{N}" for device in pod.ids("app", configuration_resource)
    )
    envs = dict(pod.allocations["app"][configuration_resource].response.envs)
    assert {envs[naming.property_env_name("URL", i)] for i in (a, b)} == {"a", "b"}
    await n.until_capacity(configuration_resource, 4, 4)  # three held, one still free
    second = await n.admit(Container("app", {configuration_resource: 1}))
    (device,) = second.ids("app", configuration_resource)
    assert f"C:{device}:{N}" in {**await cluster.usage(a), **await cluster.usage(b)}.values()
    with pytest.raises(AdmissionError, match="unavailable"):
        await n.admit(Container("app", {configuration_resource: 1}))


async def test_init_container_ids_offered_again_are_accepted(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Akri #843: the kubelet hands the init container's ids to the app container."""
    a, b, n, _ = await two_instances(cluster, start_node, unique=True)
    configuration_resource = "akri.sh/cfg"
    await n.until_capacity(configuration_resource, 2, 2)

    pod = await n.admit(
        Container("app", {configuration_resource: 1}),
        init=[Container("init", {configuration_resource: 1})],
    )

    assert pod.ids("init", configuration_resource) == pod.ids("app", configuration_resource)
    (device,) = pod.ids("app", configuration_resource)
    usage = {**await cluster.usage(a), **await cluster.usage(b)}
    assert holders(usage) == [f"C:{device}:{N}"]


async def test_a_deleted_pods_replacement_is_admitted(
    cluster: Cluster, start_node: StartNode
) -> None:
    """Akri #849: the replacement gets the same id the node still holds; no admission error."""
    a, b, n, _ = await two_instances(cluster, start_node, unique=True)
    configuration_resource = "akri.sh/cfg"
    await n.until_capacity(configuration_resource, 2, 2)
    pod = await n.admit(Container("app", {configuration_resource: 2}))
    for _ in range(3):
        assert n.kubelet.remove_pod(pod.spec.uid)
        pod = await n.admit(Container("app", {configuration_resource: 2}))
    usage = {**await cluster.usage(a), **await cluster.usage(b)}
    assert holders(usage) == sorted(
        f"C:{device}:{N}" for device in pod.ids("app", configuration_resource)
    )


async def test_a_refused_allocate_leaves_nothing_held(
    cluster: Cluster, start_node: StartNode
) -> None:
    a, b, n, _ = await two_instances(cluster, start_node, unique=True)
    configuration_resource = "akri.sh/cfg"
    await n.until_capacity(configuration_resource, 2, 2)

    code, message = await allocate_error(n, configuration_resource, ["cfg-0", "cfg-1", "cfg-2"])

    assert code == grpc.StatusCode.FAILED_PRECONDITION
    assert "cannot allocate cfg-2" in message
    assert holders({**await cluster.usage(a), **await cluster.usage(b)}) == []


async def test_each_container_of_one_request_gets_its_own_env(
    cluster: Cluster, start_node: StartNode
) -> None:
    a, b, n, _ = await two_instances(cluster, start_node, unique=True)
    configuration_resource = "akri.sh/cfg"
    await n.until_capacity(configuration_resource, 2, 2)

    response = await allocate(n, configuration_resource, ["cfg-0"], ["cfg-1"])

    first, second = (dict(c.envs) for c in response.container_responses)
    assert {first["URL"], second["URL"]} == {"a", "b"}  # one device each: plain names too
    assert holders({**await cluster.usage(a), **await cluster.usage(b)}) == sorted(
        [f"C:cfg-0:{N}", f"C:cfg-1:{N}"]
    )
