"""Frees slots this node holds that no container uses (docs/design.md §5.5).

The device-plugin API has no Deallocate, so the kubelet's PodResources `List` is the truth
about which devices containers use. Every interval the reclaimer compares it with what the
Instances say this node holds; a holding unused for the grace period is released with a
guarded write. Only this node's holdings are ever touched, and only listed devices count, so
an unrelated pod that is stuck or unready never delays anything (Akri #681). When the kubelet
does not answer, nothing is freed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import grpc
from kubernetes_asyncio.client.exceptions import ApiException

from akri import slots
from akri.agent import metrics
from akri.agent.instances import InstanceCache
from akri.agent.plugins.allocations import Allocations
from akri.agent.plugins.pool import released, view
from akri.api import Instance
from akri.kube.guarded import UpdateConflict
from akri.naming import RESOURCE_PREFIX
from akri.proto.podresources.v1.api_pb2 import ListPodResourcesRequest, ListPodResourcesResponse
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerStub
from akri.proto.podresources.v1.constants import POD_RESOURCES_SOCKET

if TYPE_CHECKING:  # the async stub type exists only in the generated typing stubs
    from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerAsyncStub

log = logging.getLogger(__name__)

RECLAIM_INTERVAL_S = 10.0
RECLAIM_GRACE_S = 20.0
LIST_TIMEOUT_S = 5.0
WRITE_TIMEOUT_S = 5.0
"""Bounds each release: Allocates wait while the reclaimer writes."""


def devices_in_use(response: ListPodResourcesResponse) -> set[slots.Holding]:
    """Every akri.sh device some listed container holds, named as the kubelet names it."""
    return {
        slots.Holding(devices.resource_name, device)
        for pod in response.pod_resources
        for container in pod.containers
        for devices in container.devices
        if devices.resource_name.startswith(RESOURCE_PREFIX)
        for device in devices.device_ids
    }


def _release(
    node: str, stale: Collection[slots.Holding], freed: list[slots.Holding], fresh: Instance
) -> Instance | None:
    """Release `stale` from the fresh Instance, noting in `freed` what that frees."""
    freed[:] = sorted(slots.holdings([view(fresh)], node) & set(stale), key=str)
    return released(fresh, node, stale)


class Reclaimer:
    def __init__(
        self,
        cache: InstanceCache,
        node: str,
        pod_resources_socket: Path = Path(POD_RESOURCES_SOCKET),
        *,
        allocations: Allocations,
        interval: float = RECLAIM_INTERVAL_S,
        grace: float = RECLAIM_GRACE_S,
        list_timeout: float = LIST_TIMEOUT_S,
        write_timeout: float = WRITE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache = cache
        self._node = node
        self._socket = pod_resources_socket
        self._allocations = allocations
        self._interval = interval
        self._grace = grace
        self._list_timeout = list_timeout
        self._write_timeout = write_timeout
        self._clock = clock
        self._unused_since: dict[slots.Holding, float] = {}

    async def run(self) -> None:
        """Reclaim every interval until cancelled."""
        await self._cache.synced.wait()
        while True:
            try:
                await self.reclaim()
            except Exception:  # the next round tries again; the agent must keep running
                log.exception("reclaiming slots failed")
            await asyncio.sleep(self._interval)

    async def reclaim(self) -> list[slots.Holding]:
        """One round: returns the holdings it freed."""
        in_use = await self._list()
        if in_use is None:
            return []
        async with self._allocations.lock:  # no Allocate between deciding and writing
            # A grant is a use at the time of the grant: the kubelet may not have recorded it.
            since = dict(self._unused_since)
            for holding, granted in self._allocations.recent(self._grace).items():
                since[holding] = max(since.get(holding, granted), granted)
            instances = self._cache.all()
            held = slots.holdings(map(view, instances), self._node)
            stale, self._unused_since = slots.stale_holdings(
                held, in_use, since, self._clock(), self._grace
            )
            freed: list[slots.Holding] = []
            for instance in instances:
                if stale and slots.holdings([view(instance)], self._node) & stale:
                    freed += await self._release(instance, stale)
        return freed

    async def _list(self) -> set[slots.Holding] | None:
        try:
            async with grpc.aio.insecure_channel(f"unix://{self._socket}") as channel:
                stub: PodResourcesListerAsyncStub = PodResourcesListerStub(channel)
                response = await stub.List(ListPodResourcesRequest(), timeout=self._list_timeout)
        except grpc.aio.AioRpcError as error:
            log.warning(
                "PodResources at %s did not answer (%s): freeing nothing this round",
                self._socket,
                error.details(),
            )
            return None
        return devices_in_use(response)

    async def _release(
        self, instance: Instance, stale: Collection[slots.Holding]
    ) -> list[slots.Holding]:
        namespace, name = instance.metadata.namespace or "", instance.metadata.name or ""
        freed: list[slots.Holding] = []
        release = functools.partial(_release, self._node, stale, freed)
        try:
            async with asyncio.timeout(self._write_timeout):  # Allocates wait for the lock
                stored = await self._cache.update(namespace, name, release)
        except (ApiException, UpdateConflict, aiohttp.ClientError, TimeoutError) as error:
            log.warning("cannot free slots of Instance %s/%s: %s", namespace, name, error)
            return []
        if stored is None:
            return []
        for holding in freed:
            log.info(
                "freed %s of %s (Instance %s): no container used it for %gs",
                holding.device,
                holding.resource,
                name,
                self._grace,
            )
        metrics.SLOTS_RECLAIMED.inc(len(freed))
        return freed
