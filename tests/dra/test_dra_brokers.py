"""Brokers in DRA mode: the controller deploys a broker per Instance and node as in
device-plugin mode, but each gets its slot through a claim made from the Instance's
ResourceClaimTemplate (docs/design.md §8a); claims go with their brokers, templates with
their Instances."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from akri.sim.manifests import debug_echo_configuration, pod
from tests.dra.test_dra_end_to_end import GROUP, VERSION, _has, claims
from tests.sim.users import User
from tests.support import eventually

CFG = "cfg"
INSTANCES = sorted(naming.instance_name(CFG, d) for d in ("foo0", "foo1"))
NODES = ["m", "n"]


def configuration(unique: bool) -> dict[str, Any]:
    limits = {naming.PLACEHOLDER: "1"}
    broker = {"name": "broker", "image": "nginx", "resources": {"limits": limits}}
    return debug_echo_configuration(
        CFG,
        ["foo0", "foo1"],
        2,
        uniqueDevices=unique,
        brokerSpec={"brokerPodSpec": {"containers": [broker]}},
    )


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(
        NODES, workdir=socket_dir, agents=True, controller=Tuning(), mode=Mode.DRA
    ) as running:
        yield running


async def brokers(user: User) -> list[Any]:
    listed = await user.core.list_namespaced_pod(
        "default", label_selector=f"{naming.LABEL_CONTROLLER}={naming.CONTROLLER_LABEL_VALUE}"
    )
    return list(listed.items)


async def templates(cluster: Cluster) -> list[str]:
    api = client.CustomObjectsApi(cluster.api_client())
    found = await api.list_namespaced_custom_object(
        GROUP, VERSION, "default", "resourceclaimtemplates"
    )
    return sorted(t["metadata"]["name"] for t in found["items"])


@pytest.mark.parametrize("unique", [True, False])
async def test_brokers_hold_their_instance_slot_through_claims(
    cluster: Cluster, unique: bool
) -> None:
    user = User(cluster)
    await user.apply(configuration(unique))

    async def all_running() -> bool:
        found = await brokers(user)
        return len(found) == len(INSTANCES) * len(NODES) and all(
            p.status.phase == "Running" for p in found
        )

    await eventually(all_running, "a running broker per Instance and node")
    assert await templates(cluster) == INSTANCES
    by_claim = {c["metadata"]["name"]: c for c in await claims(cluster)}
    for broker in await brokers(user):
        instance = broker.metadata.labels[naming.LABEL_INSTANCE]
        (status,) = broker.status.resource_claim_statuses
        claim = by_claim[status.resource_claim_name]
        assert claim["metadata"]["ownerReferences"][0]["uid"] == broker.metadata.uid
        (result,) = claim["status"]["allocation"]["devices"]["results"]
        assert result["device"].startswith(instance)  # the device, or one of its slots
        assert not any(
            naming.RESOURCE_PREFIX in r for r in broker.spec.containers[0].resources.limits or {}
        )

    # The brokers took every slot (capacity 2, two nodes): a user's pod finds none left.
    await user.run(pod("user", "n", CFG, 1))
    await eventually(lambda: _has(user, "user", "cannot allocate all claims"), "user pod waits")

    await user.custom.delete_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "configurations", CFG
    )

    async def cleaned_up() -> bool:
        made = [c for c in await claims(cluster) if "-akri-slot-" in c["metadata"]["name"]]
        return not await brokers(user) and not made and not await templates(cluster)

    await eventually(cleaned_up, "brokers, their claims and the templates deleted")
