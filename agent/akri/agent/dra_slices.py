"""DRA mode, the node's part of publishing (docs/design.md §8a): the pool of each Configuration's
local devices on this node, as ResourceSlices with `nodeName`, owned by the Node so they go
with it. Shared devices are the controller's (`akri.controller.dra`).

Follows the Instance cache and the Configurations; a round recomputes every local pool and
writes only the difference, so a burst of changes costs one round and no change costs no write.
It also follows this node's slices, so one deleted by someone else is written again: a
kubelet deletes all of its node's slices when it starts (docs/design.md §8a).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Collection, Sequence

from kubernetes_asyncio import client

from akri import naming
from akri.agent.changes import Changes
from akri.agent.instances import InstanceCache, Subscription
from akri.api import Configuration
from akri.backoff import Backoff
from akri.dra.devices import published_devices
from akri.dra.slices import Pool, local_pool_name
from akri.dra.writer import GROUP, SLICES, VERSION, SliceWriter
from akri.kube.reflector import EventType, Object, Reflector
from akri.logs import OnceLog

log = logging.getLogger(__name__)

ConfigurationLookup = Callable[[str, str], Configuration | None]


class LocalSlices:
    """Run with `run()`. `allocated(pool)` names the devices of a pool that this node's claims
    hold: a lowered capacity keeps those offered (`akri.dra.devices.offered_slots`)."""

    def __init__(
        self,
        api_client: client.ApiClient,
        cache: InstanceCache,
        configurations: ConfigurationLookup,
        node: str,
        allocated: Callable[[str], Collection[str]],
        changes: Sequence[Changes],
    ) -> None:
        """`changes`: besides the Instances', what calls for a new round (a Configuration
        changed, a claim was prepared or unprepared here)."""
        self._api_client = api_client
        self._allocated = allocated
        self._changes = changes
        self._cache = cache
        self._configurations = configurations
        self._node = node
        self.writer = SliceWriter(api_client, node)
        self._wake = asyncio.Event()
        self._warn_once = OnceLog(log)
        self._owner: dict[str, str] | None = None
        self.rounds = 0
        """Rounds completed (tests wait on it)."""

    async def run(self) -> None:
        backoff = Backoff(initial=0.1, maximum=10.0)
        own = Reflector(
            functools.partial(
                client.CustomObjectsApi(self._api_client).list_cluster_custom_object,
                GROUP,
                VERSION,
                SLICES,
            ),
            self._slice_changed,
            slim=True,
            field_selector=f"spec.nodeName={self._node}",
        )
        with contextlib.ExitStack() as listening:
            for other in self._changes:
                listening.enter_context(other.listening(self._wake.set))
            changes = listening.enter_context(self._cache.subscribe())
            follow = asyncio.gather(self._follow(changes), own.run())
            try:
                await self._cache.synced.wait()
                while True:
                    self._wake.clear()
                    try:
                        await self._round()
                        backoff.reset()
                    except Exception:  # API trouble: try again after a pause
                        log.exception("publishing this node's ResourceSlices failed")
                        await asyncio.sleep(backoff.next_delay())
                        continue
                    self.rounds += 1
                    await self._wake.wait()
            finally:
                follow.cancel()
                await asyncio.gather(follow, return_exceptions=True)

    async def _slice_changed(self, kind: EventType, _: Object) -> None:
        if kind == "DELETED":
            self._wake.set()

    async def _follow(self, changes: Subscription) -> None:
        while True:
            await changes.next()
            self._wake.set()

    def pools(self) -> list[Pool]:
        """This node's local pools as the cache and the Configurations have them now."""
        devices: dict[str, list[dict[str, object]]] = {}
        for instance in self._cache.all():
            spec = instance.spec
            if spec.shared or self._node not in spec.nodes:
                continue
            namespace = instance.metadata.namespace or "default"
            configuration = self._configurations(namespace, spec.configuration_name)
            if configuration is None:
                continue
            pool = local_pool_name(spec.configuration_name, self._node)
            mapped = published_devices(
                instance, configuration, per_device_nodes=False, allocated=self._allocated(pool)
            )
            for problem in mapped.skipped:
                self._warn_once(
                    f"Instance {namespace}/{instance.metadata.name}: attribute {problem}: skipped"
                )
            devices.setdefault(spec.configuration_name, []).extend(mapped.devices)
        labels = {naming.LABEL_TARGET_NODE: self._node}
        return [
            Pool(
                local_pool_name(name, self._node),
                self._node,
                found,
                {**labels, naming.LABEL_CONFIGURATION: name},
                self._owner,
            )
            for name, found in devices.items()
        ]

    async def _round(self) -> None:
        if self._owner is None:
            node = await client.CoreV1Api(self._api_client).read_node(self._node)
            self._owner = {
                "apiVersion": "v1",
                "kind": "Node",
                "name": self._node,
                "uid": node.metadata.uid,
            }
        if await self.writer.sync(self.pools(), remove_others=True):
            log.debug("ResourceSlices of node %s written", self._node)
