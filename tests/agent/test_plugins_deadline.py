"""Allocate is bounded: an API that hangs fails one pod, it does not block the node.

Rules: docs/design.md §6.
"""

from __future__ import annotations

import asyncio

import grpc
import pytest

from akri import naming, slots
from akri.api.pool import view
from akri.sim.apiserver import ApiServer
from akri.sim.kubelet import UNEXPECTED_ADMISSION_ERROR, AdmissionError, AdmittedPod, Container
from tests.agent.conftest import Cluster, StartNode, allocate_error, configuration
from tests.support import eventually

CONFIG = configuration("cam", capacity=2)
CONFIGURATION_RESOURCE = "akri.sh/cam"


async def test_allocate_fails_while_the_api_hangs_and_the_node_recovers(
    apiserver: ApiServer, cluster: Cluster, start_node: StartNode
) -> None:
    cluster.set_configuration(CONFIG)
    node = await start_node("node-a", allocate_timeout=0.3, reclaim=True, grace=0.2)
    name = await cluster.create_instance(CONFIG, "foo0", ["node-a"])
    instance_resource = naming.resource_name(name)
    await node.until_capacity(instance_resource, 2, 2)
    await node.until_capacity(CONFIGURATION_RESOURCE, 1, 1)

    apiserver.faults.pause()
    try:
        batches = node.manager.commits.batches
        first = asyncio.create_task(node.admit(Container("app", {instance_resource: 1})))
        await eventually(
            lambda: node.manager.commits.batches > batches, "the instance-level write to start"
        )
        # Queued behind the instance-level write, the configuration-level write starts later
        # than its Allocate and is usually still waiting for the API when that Allocate has
        # given up: it lands below.
        code, _ = await allocate_error(node, CONFIGURATION_RESOURCE, ["cam-0"])
        assert code == grpc.StatusCode.DEADLINE_EXCEEDED
        with pytest.raises(AdmissionError) as refused:
            await first
        assert refused.value.reason == UNEXPECTED_ADMISSION_ERROR
        assert "DEADLINE_EXCEEDED" in refused.value.message
        assert "not decided within 0.3s" in refused.value.message
    finally:
        apiserver.faults.resume()

    async def admitted() -> AdmittedPod | None:
        # A write the deadline cut may land now, and until the kubelet sees it, it may offer
        # that slot: a refusal then fails one pod, as an API answering slowly does (0.3 s on
        # a loaded machine), and the next pod (its controller makes one) is admitted.
        try:
            return await node.admit(Container("app", {instance_resource: 1}))
        except AdmissionError:
            return None

    pod = await eventually(admitted, "a pod to be admitted once the API answers")
    (slot,) = pod.ids("app", instance_resource)
    assert (await cluster.usage(name))[slot] == "node-a"

    async def nothing_leaked() -> bool:
        # What the cut writes recorded, no container uses: the reclaimer frees it.
        held = slots.holdings([view(await cluster.read(name))], "node-a")
        return held == node.admitted()

    await eventually(nothing_leaked, "only the admitted pod's slot to stay held")
