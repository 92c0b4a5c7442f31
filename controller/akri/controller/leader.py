"""Leader election with a coordination.k8s.io/v1 Lease: only one controller replica acts.

kubernetes_asyncio.leaderelection was considered and not used: its candidate crashes on a
network error, it leaves the leading task running when its own task is cancelled, it never
releases the lease on shutdown (a rollout waits a whole lease duration), and it needs
retry periods of at least a second. This one writes the Lease only with resourceVersion-guarded
updates, decides with `akri.controller.lease`, and bounds every request by the renew deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.lease import (
    Decision,
    LeaseObserver,
    LeaseRecord,
    claimed,
    record_of,
    released,
)
from akri.kube.calls import call, describe
from akri.kube.guarded import HTTP_CONFLICT, HTTP_NOT_FOUND

log = logging.getLogger(__name__)

_API_ERRORS = (ApiException, aiohttp.ClientError, OSError, TimeoutError)


@dataclass(frozen=True)
class LeaseTiming:
    """Seconds. `renew_deadline` < `duration`: a leader stops before others may take over."""

    duration: float = 15.0
    renew_interval: float = 5.0
    renew_deadline: float = 10.0
    retry_interval: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.renew_interval < self.renew_deadline < self.duration:
            raise ValueError(
                "lease timing needs 0 < renew interval < renew deadline < duration, got "
                f"{self.renew_interval}, {self.renew_deadline}, {self.duration}"
            )
        if self.retry_interval <= 0:
            raise ValueError("the lease retry interval must be positive")


class LeaderElector:
    """Campaign for one Lease; run the leader's work only while holding it."""

    def __init__(
        self,
        api_client: client.ApiClient,
        namespace: str,
        name: str,
        identity: str,
        timing: LeaseTiming | None = None,
        *,
        release_on_exit: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.identity = identity
        self.leading = False
        self._api = client.CoordinationV1Api(api_client)
        self._namespace = namespace
        self._name = name
        self._timing = timing or LeaseTiming()
        self._release_on_exit = release_on_exit
        self._clock = clock
        self._observer = LeaseObserver(clock)
        self._held: tuple[LeaseRecord, str] | None = None  # what we last wrote, and its rv

    async def run(self, work: Callable[[], Awaitable[None]]) -> None:
        """Wait for the lease, then run `work` until it ends or the lease is lost.

        Returns when leadership is lost (the caller should exit and be restarted); cancelling
        this cancels `work` and releases the lease so a successor starts at once.
        """
        await self._campaign()
        self.leading = True
        log.info("%s is the leader of lease %s/%s", self.identity, self._namespace, self._name)
        task = asyncio.create_task(_run(work), name="leader-work")
        try:
            await self._keep(task)
        finally:
            self.leading = False
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            if self._release_on_exit and self._held is not None:
                await self._release()
        if not task.cancelled():
            task.result()  # the work's own error, if it ended with one

    async def _campaign(self) -> None:
        while True:
            if await self._attempt(self._timing.duration):
                return
            await asyncio.sleep(self._timing.retry_interval)

    async def _keep(self, work: asyncio.Task[None]) -> None:
        """Renew until `work` ends or no renewal succeeds within the renew deadline."""
        renewed = self._clock()
        interval = self._timing.renew_interval
        while True:
            await asyncio.wait([work], timeout=interval)
            if work.done():
                return
            started = self._clock()
            left = renewed + self._timing.renew_deadline - started
            if left > 0 and await self._attempt(left):
                renewed, interval = started, self._timing.renew_interval
                continue
            if self._clock() - renewed >= self._timing.renew_deadline:
                log.error("%s lost the lease %s: stepping down", self.identity, self._name)
                self._held = None
                return
            interval = min(self._timing.retry_interval, self._timing.renew_interval)

    async def _attempt(self, limit: float) -> bool:
        """One read and, when the decision says so, one guarded write; True when we hold it."""
        try:
            async with asyncio.timeout(limit):
                return await self._try_acquire_or_renew()
        except _API_ERRORS as error:
            log.warning("lease %s/%s: %s", self._namespace, self._name, describe(error))
            return False

    async def _try_acquire_or_renew(self) -> bool:
        current = await self._read()
        now = datetime.now(UTC)
        duration = max(1, round(self._timing.duration))
        if current is None:
            stored = await self._write(claimed(None, self.identity, now, duration), None)
        else:
            record = record_of(current.get("spec"))
            self._observer.see(record)
            if self._observer.decide(self.identity) is Decision.WAIT:
                return False
            spec = claimed(record, self.identity, now, duration)
            stored = await self._write(spec, current["metadata"]["resourceVersion"])
        if stored is None:
            return False
        self._held = (record_of(stored.get("spec")), stored["metadata"]["resourceVersion"])
        return True

    async def _read(self) -> dict[str, Any] | None:
        try:
            return await call(self._api.read_namespaced_lease, self._name, self._namespace)
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return None
            raise

    async def _write(
        self, spec: dict[str, Any], resource_version: str | None
    ) -> dict[str, Any] | None:
        """Create (no resourceVersion) or replace the Lease; None when another writer won."""
        metadata: dict[str, Any] = {"name": self._name, "namespace": self._namespace}
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": spec}
        try:
            if resource_version is None:
                stored = await call(
                    self._api.create_namespaced_lease,
                    self._namespace,
                    {**body, "metadata": metadata},
                )
            else:
                metadata["resourceVersion"] = resource_version
                stored = await call(
                    self._api.replace_namespaced_lease,
                    self._name,
                    self._namespace,
                    {**body, "metadata": metadata},
                )
        except ApiException as error:
            if error.status == HTTP_CONFLICT:
                return None  # another candidate wrote first: decide again next time
            raise
        self._observer.see(record_of(stored.get("spec")))
        return stored

    async def _release(self) -> None:
        """Hand the lease back (guarded: a lease someone else took meanwhile is left alone)."""
        assert self._held is not None
        record, resource_version = self._held
        self._held = None
        try:
            async with asyncio.timeout(self._timing.renew_deadline):
                await self._write(released(record, datetime.now(UTC)), resource_version)
        except _API_ERRORS as error:
            log.warning("could not release lease %s: %s", self._name, describe(error))


async def _run(work: Callable[[], Awaitable[None]]) -> None:
    await work()
