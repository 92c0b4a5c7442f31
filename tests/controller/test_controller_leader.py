"""Two controllers on one API server: only the Lease holder acts; the other takes over."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.controller.controller import Controller
from akri.controller.leader import LeaderElector, LeaseTiming
from akri.controller.metrics import ControllerMetrics
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client
from tests.controller.conftest import (
    FAST,
    NAMESPACE,
    Writes,
    configuration_body,
    create_configuration,
    create_instance,
    pods,
    ready_node,
)
from tests.support import eventually

# Generous enough that a leader on a loaded machine keeps its lease (a renew deadline of 0.6 s
# made both replicas step down under load); the takeover test waits one duration.
TIMING = LeaseTiming(duration=4.0, renew_interval=0.5, renew_deadline=3.0, retry_interval=0.2)
LEASE = "akri-controller"


class Replica:
    """One controller replica: its own client, elector and write counter."""

    def __init__(self, api: client.ApiClient, identity: str, *, release: bool) -> None:
        self.writes = Writes(api)
        self.elector = LeaderElector(
            api, NAMESPACE, LEASE, identity, TIMING, release_on_exit=release
        )
        self.controller = Controller(api, FAST, metrics=ControllerMetrics())
        self.task = asyncio.create_task(self.elector.run(self.controller.run), name=identity)

    async def stop(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    def pods_created(self) -> int:
        return self.writes.count("POST", "/pods")


@contextlib.asynccontextmanager
async def replica(
    server: ApiServer, kubeconfig: Path, identity: str, *, release: bool = True
) -> AsyncIterator[Replica]:
    api = await load_client(kubeconfig)
    async with api:
        started = Replica(api, identity, release=release)
        try:
            yield started
        finally:
            await started.stop()


async def lease_holder(api: client.ApiClient) -> str:
    lease = await client.CoordinationV1Api(api).read_namespaced_lease(LEASE, NAMESPACE)
    return str(lease.spec.holder_identity or "")


async def test_only_the_leader_acts_and_the_other_takes_over_after_expiry(
    apiserver: ApiServer, api: client.ApiClient, tmp_path: Path
) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "replicas")
    await ready_node(api, "node-0")
    configuration = await create_configuration(
        api,
        configuration_body(
            "cam", broker_pod_spec={"containers": [{"name": "b", "image": "busybox"}]}
        ),
    )
    async with replica(apiserver, kubeconfig, "a", release=False) as a:
        await eventually(lambda: a.elector.leading, "a to lead")
        async with replica(apiserver, kubeconfig, "b") as b:
            first = await create_instance(api, configuration, "dev0", ["node-0"])
            await eventually(lambda: _has(api, first.metadata.name), "the leader's broker")
            assert (a.pods_created(), b.pods_created()) == (1, 0)
            assert not b.elector.leading
            assert not b.writes.paths  # a follower only reads the Lease

            await a.stop()  # a crash: the lease is not released
            crashed = asyncio.get_running_loop().time()
            assert await lease_holder(api) == "a"
            await eventually(lambda: b.elector.leading, "b to take over", deadline_s=60)
            waited = asyncio.get_running_loop().time() - crashed
            # b could not know a was gone before the lease ran out (less a's last renew gap).
            assert waited >= TIMING.duration - TIMING.renew_interval - 0.1

            second = await create_instance(api, configuration, "dev1", ["node-0"])
            await eventually(lambda: _has(api, second.metadata.name), "the new leader's broker")
            assert (a.pods_created(), b.pods_created()) == (1, 1)


async def test_a_leader_that_stops_hands_the_lease_over(
    apiserver: ApiServer, api: client.ApiClient, tmp_path: Path
) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "replicas")
    async with replica(apiserver, kubeconfig, "a") as a:
        await eventually(lambda: a.elector.leading, "a to lead")
        await a.stop()
        assert await lease_holder(api) == ""  # released: a successor need not wait
        async with replica(apiserver, kubeconfig, "b") as b:
            await eventually(lambda: b.elector.leading, "b to lead")
            lease = await client.CoordinationV1Api(api).read_namespaced_lease(LEASE, NAMESPACE)
            assert lease.spec.holder_identity == "b"
            assert lease.spec.lease_transitions == 0  # a release is not a takeover


async def _has(api: client.ApiClient, instance: Any) -> bool:
    return naming.broker_pod_name(str(instance), "node-0", True) in await pods(api)
