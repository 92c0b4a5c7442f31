"""The agent's view of Instances, and its only way to change them.

One reflector follows every Instance the agent may serve; device plugins, discovery and the
slot reclaimer read this cache instead of the API, and wait on `changes` instead of polling.
Writes go through the resourceVersion-guarded writer; the stored result is put into the cache
at once, so a slot taken through one plugin shows in the other plugin's ListAndWatch without
waiting for the watch to echo it back.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable

from kubernetes_asyncio import client
from pydantic import ValidationError

from akri import naming
from akri.api import Instance
from akri.kube.guarded import CustomResource, GuardedWriter
from akri.kube.reflector import EventType, Key, Object, Reflector, object_key

log = logging.getLogger(__name__)

INSTANCES = CustomResource(naming.GROUP, naming.VERSION, Instance.plural)
InstanceMutation = Callable[[Instance], Instance | None]


class Changes:
    """A counter that waiters can block on: wakes everyone once per change, loses none."""

    def __init__(self) -> None:
        self.version = 0
        self._condition = asyncio.Condition()

    async def bump(self) -> None:
        async with self._condition:
            self.version += 1
            self._condition.notify_all()

    async def wait_after(self, version: int) -> int:
        """Return once the version is past `version`; returns the new version."""
        async with self._condition:
            await self._condition.wait_for(lambda: self.version > version)
            return self.version


class InstanceCache:
    def __init__(
        self,
        api_client: client.ApiClient,
        namespace: str | None = None,
        *,
        on_conflict: Callable[[], None] = lambda: None,
    ) -> None:
        custom = client.CustomObjectsApi(api_client)
        group, version, plural = INSTANCES.group, INSTANCES.version, INSTANCES.plural
        list_instances = (
            functools.partial(custom.list_cluster_custom_object, group, version, plural)
            if namespace is None
            else functools.partial(
                custom.list_namespaced_custom_object, group, version, namespace, plural
            )
        )
        self.reflector = Reflector(list_instances, self._observe)
        self.writer = GuardedWriter(api_client, INSTANCES, on_conflict=on_conflict)
        self.changes = Changes()
        self._custom = custom
        self._parsed: dict[Key, Instance] = {}

    async def run(self) -> None:
        await self.reflector.run()

    @property
    def synced(self) -> asyncio.Event:
        return self.reflector.synced

    def all(self) -> list[Instance]:
        return list(self._parsed.values())

    def get(self, namespace: str, name: str) -> Instance | None:
        return self._parsed.get((namespace, name))

    def of_configuration(self, namespace: str, configuration: str) -> list[Instance]:
        return [
            i
            for (ns, _), i in self._parsed.items()
            if ns == namespace and i.spec.configuration_name == configuration
        ]

    async def create(self, instance: Instance) -> Instance:
        """Create `instance`; raises ApiException 409 when it exists (another node was first)."""
        namespace = instance.metadata.namespace or "default"
        stored: Object = await self._custom.create_namespaced_custom_object(
            INSTANCES.group, INSTANCES.version, namespace, INSTANCES.plural, instance.to_wire()
        )
        return await self._remember(stored)

    async def update(self, namespace: str, name: str, mutate: InstanceMutation) -> Instance | None:
        """Guarded read-modify-write; `mutate` returns the new Instance or None for no change.

        Returns the Instance as stored, or None when it no longer exists.
        """

        def on_wire(obj: Object) -> Object | None:
            changed = mutate(Instance.from_wire(obj))
            return None if changed is None else changed.to_wire()

        cached = self.reflector.objects.get((namespace, name))
        stored = await self.writer.update(namespace, name, on_wire, cached=cached)
        return None if stored is None else await self._remember(stored)

    async def delete(self, namespace: str, name: str, resource_version: str) -> None:
        """Delete an Instance only if it is unchanged since it was read (a precondition)."""
        await self._custom.delete_namespaced_custom_object(
            INSTANCES.group,
            INSTANCES.version,
            namespace,
            INSTANCES.plural,
            name,
            body=client.V1DeleteOptions(
                preconditions=client.V1Preconditions(resource_version=resource_version)
            ),
        )

    async def _remember(self, stored: Object) -> Instance:
        instance = Instance.from_wire(stored)
        key = object_key(stored)
        self.reflector.objects[key] = stored
        self._parsed[key] = instance
        await self.changes.bump()
        return instance

    async def _observe(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        known = self._parsed.get(key)
        if kind == "DELETED":
            if self._parsed.pop(key, None) is not None:
                await self.changes.bump()
            return
        if known is not None and known.metadata.resource_version == obj["metadata"].get(
            "resourceVersion"
        ):
            return  # our own write, already applied
        try:
            self._parsed[key] = Instance.from_wire(obj)
        except ValidationError as error:
            log.error("ignoring malformed Instance %s/%s: %s", *key, error)
            self._parsed.pop(key, None)
        await self.changes.bump()
