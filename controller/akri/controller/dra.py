"""DRA mode, the cluster-wide part (docs/design.md §8a): a DeviceClass per Configuration and the
pool of its shared devices.

Shared devices are published by the controller, not by agents: the controller already runs as
one elected leader and already follows every Instance, so each shared pool has exactly one
writer without a second election among agents, and a device seen by many nodes is published
once, with per-device node selection listing `Instance.spec.nodes`. Local devices are published
by the agent of their node (`akri.agent.dra`).

Cluster-scoped objects cannot be owned by a namespaced Configuration, so the DeviceClass and
the shared slices carry the Configuration's label and are deleted here with it.
"""

from __future__ import annotations

import logging

from kubernetes_asyncio import client

from akri import naming
from akri.api import Configuration, Instance
from akri.controller.context import CONFIGURATION, POOL, Caches
from akri.dra.devices import (
    HOSTNAME_LABEL,
    allocated_devices,
    device_class,
    device_class_name,
    published_devices,
)
from akri.dra.slices import Pool, shared_pool_name
from akri.dra.writer import SliceWriter, apply_device_class, delete_device_classes

log = logging.getLogger(__name__)

OWNED = f"{naming.LABEL_CONTROLLER}={naming.CONTROLLER_LABEL_VALUE}"


def _labels(configuration: str) -> dict[str, str]:
    return {
        naming.LABEL_CONFIGURATION: configuration,
        naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
    }


class DraPublisher:
    """Publishes what the controller owns in DRA mode; `reconcile` per Configuration key."""

    def __init__(self, api_client: client.ApiClient, caches: Caches) -> None:
        self._api_client = api_client
        self._caches = caches
        self.slices = SliceWriter(api_client, None)
        self._warned: set[str] = set()

    def _pool(self, namespace: str, name: str, configuration: Configuration) -> Pool:
        pool = shared_pool_name(name)
        claims = self._caches.claims.by(POOL, pool) if self._caches.claims is not None else []
        allocated = allocated_devices(claims, pool)
        devices = []
        for obj in self._caches.instances.by(CONFIGURATION, (namespace, name)):
            instance = Instance.from_wire(obj)
            if not instance.spec.shared:
                continue
            mapped = published_devices(
                instance,
                configuration,
                per_device_nodes=True,
                allocated=allocated,
                hostnames=self._hostnames(instance.spec.nodes),
            )
            for problem in mapped.skipped:
                self._warn(f"Instance {namespace}/{instance.metadata.name}: attribute {problem}")
            devices.extend(mapped.devices)
        return Pool(pool, None, devices, _labels(name))

    def _hostnames(self, nodes: list[str]) -> dict[str, str]:
        """The `kubernetes.io/hostname` label of each of `nodes` the Node cache knows."""
        found = {}
        for node in nodes:
            obj = self._caches.nodes.get("", node)
            label = ((obj or {}).get("metadata", {}).get("labels") or {}).get(HOSTNAME_LABEL)
            if label:
                found[node] = str(label)
        return found

    async def reconcile(self, namespace: str, name: str) -> None:
        obj = self._caches.configurations.get(namespace, name)
        if obj is None:
            await delete_device_classes(
                self._api_client, f"{naming.LABEL_CONFIGURATION}={name},{OWNED}", set()
            )
            await self.slices.sync([Pool(shared_pool_name(name), None, [])])
            return
        configuration = Configuration.from_wire(obj)
        if await apply_device_class(self._api_client, device_class(configuration, _labels(name))):
            log.info("DeviceClass %s written", device_class_name(name))
        await self.slices.sync([self._pool(namespace, name, configuration)])

    async def sweep(self) -> None:
        """Remove the DeviceClasses and shared pools of Configurations deleted while no
        controller ran (the caches are synced)."""
        names = {key[1] for key in self._caches.configurations.reflector.objects}
        await delete_device_classes(self._api_client, OWNED, {device_class_name(n) for n in names})
        stored = await self.slices.stored()
        wanted = {shared_pool_name(n) for n in names}
        gone = [Pool(pool, None, []) for pool in stored if pool not in wanted]
        if gone:
            await self.slices.sync(gone)

    def _warn(self, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            log.warning("%s: skipped", message)
