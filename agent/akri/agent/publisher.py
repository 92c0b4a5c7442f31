"""Make one Configuration's Instances match what this node discovers, through the cache.

Thin I/O around `reconcile.plan`: every write is a guarded update through the InstanceCache
(conflicts re-decide on the fresh Instance) or a create; an Instance this node leaves empty
is deleted with a resourceVersion precondition, so a node joining meanwhile keeps it alive.
When nothing changed the plan is empty and nothing is sent to the API.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable

from kubernetes_asyncio.client.exceptions import ApiException

from akri.agent.devices import DeviceStore
from akri.agent.instance_reports import InstanceReporter
from akri.agent.instances import InstanceCache
from akri.agent.metrics import AgentMetrics
from akri.agent.offline import OfflineGrace
from akri.agent.offline_reports import OfflineReports, reported
from akri.agent.reconcile import (
    Delete,
    Wanted,
    belongs,
    joined,
    left,
    plan,
    planning_key,
    wanted_instances,
)
from akri.api import Configuration, Instance
from akri.backoff import Backoff
from akri.discovery.model import Device
from akri.kube.guarded import HTTP_CONFLICT, HTTP_NOT_FOUND
from akri.logs import OnceLog

log = logging.getLogger(__name__)

DELETE_ATTEMPTS = 10


def delete_backoff() -> Backoff:
    return Backoff(initial=0.02, maximum=1.0)


def reads(instance: Instance, node: str) -> tuple[object, ...]:
    """All that `node`'s `publish` reads of `instance` besides its name and Configuration: a
    change that keeps this equal (such as a slot taken elsewhere) changes no decision of it."""
    return planning_key(instance), reported(instance, node)


class InstancePublisher:
    """One per Configuration and node; `publish` is called with every new device list."""

    def __init__(
        self,
        cache: InstanceCache,
        node: str,
        grace: float,
        clock: Callable[[], float],
        devices: DeviceStore,
        metrics: AgentMetrics,
        *,
        backoff: Callable[[], Backoff] = delete_backoff,
    ) -> None:
        self._cache = cache
        self._backoff = backoff
        self._node = node
        self._grace = OfflineGrace(grace)
        self._offline = OfflineReports(InstanceReporter(cache, node), node, grace)
        self._clock = clock
        self._warn_once = OnceLog(log)
        self._devices = devices
        self._metrics = metrics

    async def publish(
        self, configuration: Configuration, shared: bool, devices: Iterable[Device]
    ) -> float | None:
        """Write what differs; returns when (on `clock`) a missing device's grace runs out."""
        wanted, problems = wanted_instances(configuration, self._node, shared, devices)
        for problem in problems:
            self._warn_once(f"Configuration {configuration.metadata.name}: {problem}")
        # before the Instances list this node, so its plugins never serve a device without
        self._devices.report(self, {name: want.device for name, want in wanted.items()})
        namespace = configuration.metadata.namespace or "default"
        todo = plan(configuration, self._node, shared, wanted, self._instances(configuration))
        await self._create_all(configuration, todo.create, wanted)
        for want in todo.join:
            await self._join(configuration, want)
        expired = self._grace.expired(todo.missing, self._clock())
        for name in todo.leave + expired:
            await self._leave(namespace, name)
        await self._offline.update(
            namespace, self._grace.missing - set(expired), wanted, self._instances(configuration)
        )
        self._count(configuration)
        return self._grace.next_expiry()

    async def leave_all(self, configuration: Configuration) -> None:
        """The Configuration is gone: leave its live Instances (the collector deletes them too;
        guarded writes never bring one back, and a 404 just means it was faster)."""
        self._devices.report(self, {})
        namespace = configuration.metadata.namespace or "default"
        for instance in self._instances(configuration):
            if belongs(instance, configuration) and self._node in instance.spec.nodes:
                await self._leave(namespace, instance.metadata.name or "")
        self._count(configuration)

    def _instances(self, configuration: Configuration) -> list[Instance]:
        namespace = configuration.metadata.namespace or "default"
        return self._cache.of_configuration(namespace, configuration.metadata.name or "")

    async def _create_all(
        self, configuration: Configuration, instances: list[Instance], wanted: dict[str, Wanted]
    ) -> None:
        """Create them pipelined through the agent's window: a thousand new devices are neither
        created one by one nor all at once. After a failure the rest wait for the next round."""

        async def create(instance: Instance) -> None:
            await self._create(configuration, instance, wanted[instance.metadata.name or ""])

        await self._cache.creates.each(instances, create)

    async def _create(self, configuration: Configuration, instance: Instance, want: Wanted) -> None:
        try:
            await self._cache.create(instance)
            log.info("created Instance %s", instance.metadata.name)
        except ApiException as error:
            if error.status != HTTP_CONFLICT:
                raise
            await self._join(configuration, want)  # another node was first

    async def _join(self, configuration: Configuration, want: Wanted) -> None:
        namespace = configuration.metadata.namespace or "default"
        await self._cache.update(
            namespace, want.name, lambda i: joined(i, configuration, self._node, want.properties)
        )

    async def _leave(self, namespace: str, name: str) -> None:
        """Leave `nodes`, or delete the Instance when this node is the last one in it.

        The delete carries the resourceVersion the decision saw: if another node joined (or a
        slot changed) meanwhile it fails with 409 and the decision is made again. Giving up
        after a few rounds is safe: this node is still listed, so the next round retries.
        """
        backoff = self._backoff()
        for _ in range(DELETE_ATTEMPTS):
            deletes: list[Delete] = []
            await self._cache.update(
                namespace, name, functools.partial(self._leaving, deletes=deletes)
            )
            if not deletes:
                log.info("left Instance %s", name)
                return
            try:
                await self._cache.delete(namespace, name, deletes[-1].resource_version)
                log.info("deleted Instance %s: no other node sees its device", name)
                return
            except ApiException as error:
                if error.status == HTTP_NOT_FOUND:
                    return
                if error.status != HTTP_CONFLICT:
                    raise
            await asyncio.sleep(backoff.next_delay())  # let the cache catch up, then decide again
        # Raised, not logged: only a change of what `reads` returns starts a round by itself.
        raise RuntimeError(f"Instance {name} kept changing while this node left it")

    def _leaving(self, instance: Instance, *, deletes: list[Delete]) -> Instance | None:
        """The write that leaves `instance`; a delete decision is noted and nothing written."""
        decision = left(instance, self._node)
        if isinstance(decision, Delete):
            deletes.append(decision)
            return None
        return decision

    def _count(self, configuration: Configuration) -> None:
        mine = [i for i in self._instances(configuration) if self._node in i.spec.nodes]
        for shared in (True, False):
            count = self._metrics.instance_count.labels(
                configuration.metadata.name, str(shared).lower()
            )
            count.set(sum(i.spec.shared is shared for i in mine))
