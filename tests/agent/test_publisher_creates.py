"""A thousand new devices: creates pipelined through the window, none lost when the API pushes
back or fails, still one create per Instance (API emulator, real HTTP)."""

from __future__ import annotations

import time

from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.agent.devices import DeviceStore
from akri.agent.instances import InstanceCache
from akri.agent.metrics import AgentMetrics
from akri.agent.publisher import InstancePublisher
from akri.api import Configuration, Instance
from akri.backoff import Backoff
from akri.discovery.model import Device
from akri.kube.pipeline import Pipeline
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.agent.conftest import NAMESPACE, Cluster, configuration
from tests.support import running

NODE = "node-a"
DEVICES = 80
ROUNDS = 10


def quick() -> Backoff:
    return Backoff(initial=0.01, maximum=0.02)  # caps the emulator's Retry-After of 1 s


async def test_throttling_and_errors_lose_no_instance_and_write_each_once(
    apiserver: ApiServer, cluster: Cluster
) -> None:
    created = await cluster.custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", configuration("cam").to_wire()
    )
    cam = Configuration.from_wire(created)  # with its uid: the Instances it owns stay
    cluster.set_configuration(cam)
    cache = InstanceCache(cluster.api, creates=Pipeline(backoff=quick))
    devices = [Device(f"dev{i}") for i in range(DEVICES)]
    expected = {naming.instance_name("cam", d.id, NODE) for d in devices}
    # The first rule that answers wins: the 500s come first, so a 429 never hides one.
    failing = apiserver.faults.add(verb="create", resource="instances", status=500, count=2)
    throttled = apiserver.faults.add(
        verb="create", resource="instances", status=429, probability=0.3
    )
    creates = apiserver.faults.add(FaultRule(verb="create", resource="instances"))
    other_writes = [
        apiserver.faults.add(FaultRule(verb=verb, resource="instances"))
        for verb in ("update", "patch", "delete")
    ]
    publisher = InstancePublisher(cache, NODE, 0.0, time.monotonic, DeviceStore(), AgentMetrics())
    statuses: list[int] = []
    async with running(cache.run()):
        await cache.synced.wait()
        for _ in range(ROUNDS):  # as the runner does: a failed round is tried again
            try:
                await publisher.publish(cam, False, devices)
                break
            except ApiException as error:
                statuses.append(error.status)
    assert failing.hits == 2
    assert statuses in ([500], [500, 500])  # both may fail one round
    listed = await cluster.custom.list_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "instances"
    )
    stored = {i["metadata"]["name"]: Instance.from_wire(i) for i in listed["items"]}
    assert stored.keys() == expected
    assert all(i.spec.nodes == [NODE] for i in stored.values())
    assert throttled.hits > 0
    assert cache.creates.window.decreases > 0
    # Every create sent landed, or was refused (429 or 500, which one request may both
    # match): none was sent again after it landed.
    assert DEVICES + throttled.hits <= creates.hits <= DEVICES + throttled.hits + failing.hits
    assert [rule.hits for rule in other_writes] == [0, 0, 0]
