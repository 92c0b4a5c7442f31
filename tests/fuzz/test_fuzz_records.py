"""Fuzzing what the agent reads from the API: Configuration specs and deviceUsage contents.

- Every Configuration the API server accepts, with any devices, gives Instances (created and
  then joined by a second node) that the API server accepts too: the agent never loops on a
  write that is refused.
- Whatever `deviceUsage` says, the agent's plugins keep serving and advertise exactly what the
  slot pool decides, and a reconciliation round changes nothing while no container uses a slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from akri import naming, slots
from akri.agent.plugins import Reclaimer
from akri.agent.plugins.reclaim import Round
from akri.agent.reconcile import joined, wanted_instances
from akri.api import Configuration, Instance, new_instance
from akri.api.pool import view
from akri.kube.guarded import HTTP_CONFLICT
from tests.agent.conftest import NAMESPACE, AgentNode, Clock, Cluster, StartNode, configuration
from tests.fuzz.test_fuzz_discover import devices, keys, texts

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
UNPROCESSABLE = 422

# Mostly names the API accepts (refused ones are filtered out, proving nothing), a few it refuses.
names = st.one_of(
    st.sampled_from(["cfg", "a", "a" * 63, "cam-1", "x.y", "-bad", "Bad", "a" * 254, ""]),
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,45}[a-z0-9])?", fullmatch=True),
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,45}[a-z0-9])?", fullmatch=True),
    st.text("abcz09-.", min_size=1, max_size=70),
)
properties = st.lists(
    st.fixed_dictionaries(
        {"name": st.one_of(keys, st.just("USER")), "value": texts},
    ),
    max_size=3,
)
specs = st.fixed_dictionaries(
    {
        "discoveryHandler": st.fixed_dictionaries(
            {
                "name": st.one_of(texts, st.just("debugEcho")),
                "discoveryDetails": texts,
                "discoveryProperties": properties,
            }
        ),
        "capacity": st.integers(-2, 300),
        "uniqueDevices": st.booleans(),
        "brokerProperties": st.dictionaries(keys, texts, max_size=5),
    }
)


async def accepted(created: Any) -> dict[str, Any] | None:
    """The stored object, or None when the API server refused it as invalid."""
    try:
        stored: dict[str, Any] = await created
    except ApiException as error:
        if error.status != UNPROCESSABLE:
            raise
        return None
    return stored


# Most drawn specs are refused by the API (hostile property names) and filtered out: that is the
# input space on purpose, and Hypothesis still runs max_examples accepted ones.
@settings(FUZZ, suppress_health_check=[*FUZZ.suppress_health_check, HealthCheck.filter_too_much])
@given(name=names, spec=specs, listed=st.lists(devices, max_size=4), shared=st.booleans())
async def test_every_instance_of_an_accepted_configuration_is_accepted(
    api: client.ApiClient,
    name: str,
    spec: dict[str, Any],
    listed: list[Any],
    shared: bool,
) -> None:
    custom = client.CustomObjectsApi(api)
    body: dict[str, Any] = {"apiVersion": naming.API_VERSION, "kind": "Configuration"}
    body |= {"metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}
    created = custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", body
    )
    try:
        stored = await accepted(created)
    except ApiException as error:
        assume(error.status != HTTP_CONFLICT)  # drawn twice: the second one says nothing new
        raise
    assume(stored is not None and naming.configuration_name_problem(name) is None)
    assert stored is not None
    try:
        config = Configuration.from_wire(stored)
    except ValidationError:
        return  # the agent reports it with an Event and ignores it (tests/agent)
    wanted, _ = wanted_instances(config, "node-a", shared, listed)
    for want in wanted.values():
        instance = new_instance(
            config, want.device.id, "node-a", shared=shared, properties=want.properties
        )
        made = await custom.create_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", instance.to_wire()
        )
        joining = joined(Instance.from_wire(made), config, "node-b", want.properties)
        if joining is not None:
            await custom.replace_namespaced_custom_object(
                naming.GROUP,
                naming.VERSION,
                NAMESPACE,
                "instances",
                want.name,
                joining.to_wire(),
            )
        await custom.delete_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", want.name
        )
    await custom.delete_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", name
    )


CONFIG = configuration("cam", capacity=3)
INSTANCE_NAME = naming.instance_name("cam", "foo0")
usage_values = st.one_of(
    st.sampled_from(["", "node-a", "node-b", "C:cam-0:node-a", "C:cam-9:node-b", "C:x", "a:b"]),
    st.builds("C:{}:{}".format, texts, st.sampled_from(["node-a", "node-b", ""])),
    texts,
)
usage_keys = st.one_of(st.builds(naming.slot_id, st.just(INSTANCE_NAME), st.integers(-1, 5)), texts)


@dataclass
class Served:
    cluster: Cluster
    node: AgentNode
    instance: str
    reclaimer: Reclaimer


@pytest.fixture
async def served(cluster: Cluster, start_node: StartNode) -> Served:
    cluster.set_configuration(CONFIG)
    clock = Clock()
    node = await start_node("node-a", clock=clock)
    instance = await cluster.create_instance(CONFIG, "foo0", ["node-a", "node-b"])
    await node.until_capacity(naming.resource_name(instance), 3, 3)
    reclaimer = Reclaimer(
        node.cache,
        node.name,
        node.kubelet.pod_resources_socket,
        allocations=node.allocations,
        metrics=node.metrics,
        clock=clock,
    )
    return Served(cluster, node, instance, reclaimer)


@FUZZ
@given(usage=st.dictionaries(usage_keys, usage_values, max_size=6))
async def test_any_device_usage_is_served_as_the_pool_decides(
    served: Served, usage: dict[str, str]
) -> None:
    await served.cluster.change_instance(served.instance, device_usage=usage)
    pool = view(await served.cluster.read(served.instance))
    healthy = sum(slots.instance_level_health(pool, "node-a").values())
    devices = slots.configuration_level_devices("cam", [pool], "node-a", unique=True)

    await served.node.until_capacity(naming.resource_name(served.instance), 3, healthy)
    await served.node.until_capacity("akri.sh/cam", len(devices), len(devices))
    assert await served.reclaimer.reclaim() == Round()
    assert (await served.cluster.read(served.instance)).spec.device_usage == usage
