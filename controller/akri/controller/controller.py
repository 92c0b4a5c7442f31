"""The controller: follow the API, turn every change into work keys, reconcile them.

Each event queues the keys of the objects it may affect (a Pod's Instance and Configuration,
a Configuration's Instances, ...); workers take keys from a de-duplicating queue, so a burst of
events costs one reconcile, and run the reconcile of the key's kind. A failed reconcile is
retried with backoff; nothing here ever stops the controller.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from akri import naming
from akri.backoff import Backoff
from akri.controller.brokers import reconcile_instance
from akri.controller.configurations import note_refusal, reconcile_configuration
from akri.controller.context import (
    CONFIGURATION,
    INSTANCE,
    NODE,
    Caches,
    Context,
    OnChanges,
    Tuning,
    WorkKey,
    claim_pools,
    instance_nodes,
)
from akri.controller.dra import DraPublisher
from akri.controller.metrics import BrokerPodCount, ControllerMetrics
from akri.controller.node_loss import reconcile_node
from akri.controller.nodes import NodeWatch, is_ready
from akri.controller.retries import Retries
from akri.controller.workqueue import WorkQueue
from akri.dra.mode import Mode, resolve
from akri.dra.slices import shared_pool_configuration
from akri.kube.calls import describe, is_refusal
from akri.kube.reflector import EventType, Key, Object, object_key

log = logging.getLogger(__name__)

RECONCILE_RETRY_S = (0.2, 30.0)
"""First and longest wait before a failed reconcile runs again."""


async def resolved(api_client: client.ApiClient, tuning: Tuning) -> Tuning:
    """`tuning` with its mode resolved: `auto` becomes DRA or device plugins as the cluster
    allows (docs/design.md §8a)."""
    return dataclasses.replace(tuning, mode=await resolve(tuning.mode, api_client))


class Controller:
    """`await Controller(api_client, tuning, metrics=...).run()` until cancelled (while leading).

    The tuning's mode is resolved already (`resolved`): what the controller follows and
    publishes depends on it."""

    def __init__(
        self,
        api_client: client.ApiClient,
        tuning: Tuning | None = None,
        *,
        metrics: ControllerMetrics,
    ) -> None:
        tuning = tuning or Tuning()
        if tuning.mode is Mode.AUTO:
            raise ValueError("the controller's mode is resolved before it is built (`resolved`)")
        dra = tuning.mode is Mode.DRA
        self.metrics = metrics
        self.tuning = tuning
        self.queue: WorkQueue[WorkKey] = WorkQueue()
        on = OnChanges(
            self._on_configuration,
            self._on_instance,
            self._on_pod,
            self._on_job,
            self._on_service,
            self._on_node,
            self._on_claim_template,
            self._on_claim,
        )
        self.caches = Caches(api_client, tuning.namespace, on, dra=dra)
        self.nodes = NodeWatch(tuning.node_grace)
        self.context = Context(
            api_client,
            self.caches,
            self.queue,
            Retries(lambda: Backoff(initial=tuning.backoff_initial, maximum=tuning.backoff_max)),
            tuning,
            asyncio.Semaphore(tuning.max_in_flight),
            self.nodes,
            dra=dra,
        )
        self._failures: Retries[WorkKey] = Retries(lambda: Backoff(*RECONCILE_RETRY_S))
        self._pod_count = BrokerPodCount(metrics.broker_pods)
        self.dra = DraPublisher(api_client, self.caches) if dra else None
        """What the controller publishes in DRA mode."""
        self._claim_pools: dict[Key, set[str]] = {}
        """The akri.sh pools each ResourceClaim was last seen holding devices of."""
        self.ready = False

    async def run(self) -> None:
        self.metrics.leader.set(1)
        try:
            async with asyncio.TaskGroup() as tasks:
                for cache in self.caches.all():
                    tasks.create_task(cache.run(), name="controller-watch")
                for cache in self.caches.all():
                    await cache.wait_synced()
                if self.dra is not None:
                    await self._sweep(self.dra)
                    for namespace, name in list(self.caches.configurations.reflector.objects):
                        self.queue.add((CONFIGURATION, namespace, name))
                self.ready = True
                log.info("caches synced; reconciling with %d workers", self.tuning.workers)
                for _ in range(self.tuning.workers):
                    tasks.create_task(self._work(), name="controller-worker")
        finally:
            self.ready = False
            self.queue.close()
            self._pod_count.clear()
            self.metrics.leader.set(0)

    async def _sweep(self, dra: DraPublisher) -> None:
        """Remove what deleted Configurations left, retrying API errors: the controller
        starts only once, and must not exit on a transient refusal."""
        backoff = Backoff(initial=self.tuning.backoff_initial, maximum=self.tuning.backoff_max)
        while True:
            try:
                await dra.sweep()
                return
            except (ApiException, OSError, TimeoutError) as error:
                if is_refusal(error):  # no retry cures it; reconciles report what matters
                    log.warning("DRA leftovers not swept: %s", describe(error))
                    return
                delay = backoff.next_delay()
                log.warning(
                    "sweeping DRA leftovers failed: %s; retry in %.1fs", describe(error), delay
                )
                await asyncio.sleep(delay)

    # --- events -> keys -----------------------------------------------------------------

    async def _on_configuration(self, _kind: EventType, obj: Object) -> None:
        namespace, name = object_key(obj)
        self.queue.add((CONFIGURATION, namespace, name))
        for instance in self.caches.instances.by(CONFIGURATION, (namespace, name)):
            self.queue.add((INSTANCE, namespace, instance["metadata"]["name"]))

    async def _on_instance(self, _kind: EventType, obj: Object) -> None:
        namespace, name = object_key(obj)
        self.queue.add((INSTANCE, namespace, name))
        configuration = (obj.get("spec") or {}).get("configurationName")
        if configuration:
            self.queue.add((CONFIGURATION, namespace, configuration))
        for node in instance_nodes(obj):
            known = self.caches.nodes.get("", node)
            if known is None or not is_ready(known):
                self.queue.add((NODE, "", node))

    async def _on_pod(self, kind: EventType, obj: Object) -> None:
        self._pod_count.update(kind, obj)
        self._queue_owners(obj)

    async def _on_job(self, _kind: EventType, obj: Object) -> None:
        self._queue_owners(obj)

    async def _on_service(self, _kind: EventType, obj: Object) -> None:
        self._queue_owners(obj)

    def _queue_owners(self, obj: Object) -> None:
        """Queue the Instance and the Configuration a broker object is labelled with."""
        namespace = obj["metadata"].get("namespace", "")
        labels = obj["metadata"].get("labels") or {}
        if instance := labels.get(naming.LABEL_INSTANCE):
            self.queue.add((INSTANCE, namespace, instance))
        if configuration := labels.get(naming.LABEL_CONFIGURATION):
            self.queue.add((CONFIGURATION, namespace, configuration))

    async def _on_claim_template(self, _kind: EventType, obj: Object) -> None:
        """A template is named as its Instance: one deleted by hand is made again."""
        self.queue.add((INSTANCE, *object_key(obj)))

    async def _on_claim(self, kind: EventType, obj: Object) -> None:
        """A claim allocated or freed a shared device: its Configurations' pools may offer
        other slots now (`akri.dra.devices.offered_slots`)."""
        key = object_key(obj)
        pools = self._claim_pools.pop(key, set()) | claim_pools(obj)
        if kind != "DELETED" and (held := claim_pools(obj)):
            self._claim_pools[key] = held
        for pool in pools:
            configuration = shared_pool_configuration(pool)
            for namespace, name in list(self.caches.configurations.reflector.objects):
                if configuration is not None and name == configuration:
                    self.queue.add((CONFIGURATION, namespace, name))

    async def _on_node(self, _kind: EventType, obj: Object) -> None:
        self.queue.add((NODE, "", obj["metadata"]["name"]))

    def _configuration_of(self, key: WorkKey) -> tuple[str, str] | None:
        """The Configuration a key's work is for; None for a node's (it spans several)."""
        kind, namespace, name = key
        if kind == CONFIGURATION:
            return namespace, name
        instance = self.caches.instances.get(namespace, name) if kind == INSTANCE else None
        configuration = ((instance or {}).get("spec") or {}).get("configurationName")
        return None if configuration is None else (namespace, str(configuration))

    # --- keys -> reconciles -------------------------------------------------------------

    async def _work(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self._reconcile(key)
            finally:
                self.queue.done(key)

    async def _reconcile(self, key: WorkKey) -> None:
        kind, namespace, name = key
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            if kind == INSTANCE:
                await reconcile_instance(self.context, namespace, name)
            elif kind == CONFIGURATION:
                await reconcile_configuration(self.context, namespace, name)
                if self.dra is not None:
                    await self.dra.reconcile(namespace, name)
            else:
                await reconcile_node(self.context, self.nodes, name)
        except Exception as error:  # one object's trouble must not stop the others
            # API trouble and malformed objects are expected; anything else is a bug: traceback.
            delay = self._failures.failed(key)
            if isinstance(error, ApiException | OSError | TimeoutError | ValidationError):
                log.warning(
                    "reconcile of %s %s/%s failed: %s; retry in %.1fs", *key, describe(error), delay
                )
            else:
                log.exception("reconcile of %s %s/%s failed; retry in %.1fs", *key, delay)
            self.metrics.reconciles.labels(kind, "error").inc()
            self.queue.add_after(key, delay)
            if is_refusal(error):
                await note_refusal(self.context, key, self._configuration_of(key), describe(error))
        else:
            self._failures.succeeded(key)
            self.metrics.reconciles.labels(kind, "ok").inc()
            await note_refusal(self.context, key, None, None)
        finally:
            self.metrics.reconcile_seconds.labels(kind).observe(loop.time() - started)
