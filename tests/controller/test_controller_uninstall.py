"""`akri cleanup` (the chart's pre-delete hook): Configurations deleted, then the running agents
and controller remove brokers and Instances; only an Instance nobody releases in time loses
its slots finalizer here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.controller.uninstall import Cleanup
from akri.sim.cluster import Cluster
from tests.sim.test_akri_end_to_end import CFG, configuration
from tests.sim.users import User
from tests.support import eventually

BROKER_PODS = 2  # two debugEcho devices, one node, a broker per Instance per node


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    agents = {"reclaim_grace": 0.5, "reclaim_interval": 0.2}
    async with Cluster(
        ["n"], workdir=socket_dir, agents=True, controller=Tuning(), agent_options=agents
    ) as running:
        yield running


async def akri_objects(user: User) -> tuple[list[Any], list[Any]]:
    instances = await user.custom.list_cluster_custom_object(
        naming.GROUP, naming.VERSION, "instances"
    )
    pods = await user.core.list_pod_for_all_namespaces(label_selector="controller=akri.sh")
    return instances["items"], [p for p in pods.items if not p.metadata.deletion_timestamp]


async def test_running_brokers_are_taken_down_by_the_agents_and_controller(
    cluster: Cluster,
) -> None:
    user = User(cluster)
    await user.apply(configuration(unique=True, broker=True))

    async def brokers_running() -> bool:
        _, pods = await akri_objects(user)
        return sum(1 for p in pods if p.status.phase == "Running") == BROKER_PODS

    await eventually(brokers_running, "the brokers running", 30)
    instances, _ = await akri_objects(user)
    assert all(naming.SLOTS_FINALIZER in i["metadata"]["finalizers"] for i in instances)

    outcome = await Cleanup(cluster.api_client(), None).run(grace=60, poll=0.1)

    assert outcome.deleted == [f"default/{CFG}"]
    assert outcome.forced == [], "the agents released every slot themselves"
    assert await akri_objects(user) == ([], [])


async def test_an_instance_nobody_releases_loses_its_finalizer_after_the_grace(
    api: client.ApiClient,
) -> None:
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "configurations", configuration(unique=True)
    )
    owner = {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "name": CFG,
        "uid": created["metadata"]["uid"],
    }
    instance = {
        "apiVersion": naming.API_VERSION,
        "kind": "Instance",
        "metadata": {
            "name": "held",
            "namespace": "default",
            "finalizers": [naming.SLOTS_FINALIZER],
            "ownerReferences": [owner],
        },
        "spec": {
            "configurationName": CFG,
            "shared": True,
            "nodes": ["gone"],
            "deviceUsage": {"held-0": "gone"},
        },
    }
    await custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances", instance
    )

    outcome = await Cleanup(api, "default").run(grace=0.3, poll=0.05)

    assert outcome.deleted == [f"default/{CFG}"]
    assert outcome.forced == ["default/held"]

    async def instance_gone() -> bool:
        left = await custom.list_namespaced_custom_object(
            naming.GROUP, naming.VERSION, "default", "instances"
        )
        return not left["items"]

    await eventually(instance_gone, "the released Instance to go with its Configuration", 10)
