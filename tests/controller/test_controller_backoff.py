"""A broker the kubelet keeps rejecting is recreated with a growing delay, not in a hot loop."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import re
from collections.abc import AsyncIterator

import grpc
from kubernetes_asyncio import client

from akri import naming
from akri.kube.reflector import Object, Reflector
from akri.sim.cluster import Cluster
from tests.controller.conftest import (
    FAST,
    NAMESPACE,
    Plugins,
    configuration_body,
    create_configuration,
    create_instance,
    events,
    pod_spec,
    pods,
    running,
)
from tests.support import eventually

RECREATING = re.compile(r"recreating in ([0-9.]+)s")
FAILURES = 5


@contextlib.asynccontextmanager
async def created_pods(api: client.ApiClient) -> AsyncIterator[set[str]]:
    """Uids of every Pod created in the namespace while the block runs, seen by a watch."""
    uids: set[str] = set()

    async def seen(_kind: str, pod: Object) -> None:
        uids.add(pod["metadata"]["uid"])

    core = client.CoreV1Api(api)
    reflector = Reflector(functools.partial(core.list_namespaced_pod, NAMESPACE), seen)
    task = asyncio.create_task(reflector.run())
    await reflector.synced.wait()
    try:
        yield uids
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_rejected_broker_is_recreated_with_growing_delay(
    cluster: Cluster, plugins: Plugins
) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec())
    )
    instance = await create_instance(api, configuration, "dev0", ["node-0"])
    await plugins.offer(instance, ["node-0"])
    plugin = plugins.started[("node-0", instance.metadata.name or "")]
    plugin.allocate_error = grpc.StatusCode.UNAVAILABLE  # every admission fails
    name = instance.metadata.name or ""

    async def delays() -> list[float] | None:
        found = [
            float(match[1])
            for event in await events(api, name)
            if event.reason == "BrokerEnded" and (match := RECREATING.search(event.message))
        ]
        return found if len(found) >= FAILURES else None

    async with created_pods(api) as created, running(api):
        loop = asyncio.get_running_loop()
        started = loop.time()
        announced = await eventually(delays, f"{FAILURES} rejected brokers", deadline_s=60)
        elapsed = loop.time() - started
        announced.sort()  # the order Events are listed in says nothing about their order
        # Growth: the delays double from the initial one up to the cap (jitter is 20%); once
        # at the cap they repeat.
        assert announced[-1] >= 4 * announced[0], announced
        assert announced[-1] <= FAST.backoff_max
        # No hot loop: one creation per failure (plus the one under way), and together they
        # cannot have been faster than the shortest delays the backoff allows.
        assert len(created) <= len(announced) + 1
        assert elapsed >= sum(0.8 * d for d in announced[: FAILURES - 1])

        plugin.allocate_error = None

        async def runs() -> bool:
            found = await pods(api)
            broker = found.get(naming.broker_pod_name(name, "node-0", True))
            return broker is not None and broker.status.phase == "Running"

        await eventually(runs, "the broker to run once the device works", deadline_s=60)


async def test_broker_pending_too_long_is_recreated(cluster: Cluster) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec())
    )
    # No device plugin anywhere: the broker cannot be scheduled and stays Pending.
    instance = await create_instance(api, configuration, "dev0", ["node-0"])
    name = instance.metadata.name or ""
    impatient = dataclasses.replace(FAST, pending_grace=0.3)

    async with created_pods(api) as created, running(api, impatient):
        await eventually(lambda: len(created) >= 3, "the Pending broker to be replaced twice")
        reasons = [e.reason for e in await events(api, name)]
        assert "BrokerPendingTooLong" in reasons
