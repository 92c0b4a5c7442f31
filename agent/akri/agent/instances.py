"""The agent's view of Instances, and its only way to change them.

One reflector follows every Instance the agent may serve; device plugins, discovery and the
slot reclaimer read this cache instead of the API, and subscribe to the changes they care
about instead of polling: one Instance, one Configuration's Instances, or all of them. A
subscriber is woken only by its own topic, so a node with a thousand Instances does not wake
a thousand plugins for every change. Writes go through the resourceVersion-guarded writer;
the stored result is put into the cache at once, so a slot taken through one plugin shows in
the other plugin's ListAndWatch without waiting for the watch to echo it back.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterator

from kubernetes_asyncio import client
from pydantic import ValidationError

from akri import naming
from akri.api import Instance, InstanceStatus
from akri.api.pool import protected
from akri.kube.guarded import CustomResource, GuardedWriter, Mutation
from akri.kube.pipeline import Pipeline
from akri.kube.reflector import EventType, Key, Object, Reflector, object_key

log = logging.getLogger(__name__)

INSTANCES = CustomResource(naming.GROUP, naming.VERSION, Instance.plural)
InstanceMutation = Callable[[Instance], Instance | None]


Topic = tuple[str, ...]
"""What a subscriber follows: `EVERYTHING`, `instance_topic(...)` or `configuration_topic(...)`."""
EVERYTHING: Topic = ()


def instance_topic(namespace: str, name: str) -> Topic:
    return ("instance", namespace, name)


def configuration_topic(namespace: str, configuration: str) -> Topic:
    """The Instances of one Configuration, including one that moves to or from it."""
    return ("configuration", namespace, configuration)


class Subscription:
    """Collects the keys of changed Instances; a burst of changes is one wake-up, none is lost."""

    __slots__ = ("_changed", "_event", "_relevant")

    def __init__(self, relevant: Callable[[Key], bool]) -> None:
        self._relevant = relevant
        self._changed: set[Key] = set()
        self._event = asyncio.Event()

    def notify(self, key: Key) -> None:
        if not self._relevant(key):
            return
        self._changed.add(key)
        self._event.set()

    async def next(self) -> set[Key]:
        """Wait for a change; returns the keys changed since the previous call."""
        await self._event.wait()
        self._event.clear()
        changed, self._changed = self._changed, set()
        return changed


class InstanceCache:
    def __init__(
        self,
        api_client: client.ApiClient,
        namespace: str | None = None,
        *,
        on_conflict: Callable[[], None] = lambda: None,
        creates: Pipeline | None = None,
    ) -> None:
        self.api_client = api_client
        custom = client.CustomObjectsApi(api_client)
        group, version, plural = INSTANCES.group, INSTANCES.version, INSTANCES.plural
        list_instances = (
            functools.partial(custom.list_cluster_custom_object, group, version, plural)
            if namespace is None
            else functools.partial(
                custom.list_namespaced_custom_object, group, version, namespace, plural
            )
        )
        self.reflector = Reflector(list_instances, self._observe, slim=True)
        self.writer = GuardedWriter(api_client, INSTANCES, on_conflict=on_conflict)
        self.creates = creates or Pipeline()
        """The window every create of this agent goes through (one API server)."""
        self._custom = custom
        self._parsed: dict[Key, Instance] = {}
        self._by_configuration: dict[Key, dict[str, Instance]] = {}
        self._subscribers: dict[Topic, set[Subscription]] = {}

    async def run(self) -> None:
        await self.reflector.run()

    @property
    def synced(self) -> asyncio.Event:
        return self.reflector.synced

    def all(self) -> list[Instance]:
        return list(self._parsed.values())

    def get(self, namespace: str, name: str) -> Instance | None:
        return self._parsed.get((namespace, name))

    def configuration_of(self, namespace: str, name: str) -> str | None:
        """The Configuration of a known Instance."""
        found = self.get(namespace, name)
        return None if found is None else found.spec.configuration_name

    def of_configuration(self, namespace: str, configuration: str) -> list[Instance]:
        return list(self._by_configuration.get((namespace, configuration), {}).values())

    @contextlib.contextmanager
    def subscribe(
        self, topic: Topic = EVERYTHING, relevant: Callable[[Key], bool] = lambda _: True
    ) -> Iterator[Subscription]:
        """Follow the changes of `topic` while the context lasts; subscribe before reading
        the state, so that a change in between is not missed.

        `relevant` is asked at each change, with the cache already holding its result: a
        change it rejects wakes nobody. Being asked at every change, it sees every state.
        """
        subscription = Subscription(relevant)
        self._subscribers.setdefault(topic, set()).add(subscription)
        try:
            yield subscription
        finally:
            subscribers = self._subscribers[topic]
            subscribers.discard(subscription)
            if not subscribers:
                del self._subscribers[topic]

    def reads_changed(
        self, read: Callable[[Instance], object], configuration: Key | None = None
    ) -> Callable[[Key], bool]:
        """A `relevant` for `subscribe` that rejects a change keeping what `read` takes of the
        Instance: for every Instance (EVERYTHING), or with `configuration` (namespace, name) for
        its `configuration_topic`, where joining or leaving it counts as a change. It starts
        from the cache as it is: make it when subscribing. On a busy cluster most changes are
        slots taken and released elsewhere, and each woke every follower on every node."""

        def current(key: Key) -> object:
            found = self.get(*key)
            if found is None or (
                configuration is not None
                and (key[0], found.spec.configuration_name) != configuration
            ):
                return None
            return read(found)

        followed = (
            self._parsed
            if configuration is None
            else {
                (configuration[0], name): instance
                for name, instance in self._by_configuration.get(configuration, {}).items()
            }
        )
        known = {key: read(instance) for key, instance in followed.items()}

        def changed(key: Key) -> bool:
            now = current(key)
            if known.get(key) == now:
                return False
            if now is None:
                del known[key]
            else:
                known[key] = now
            return True

        return changed

    async def create(self, instance: Instance) -> Instance:
        """Create `instance`; raises ApiException 409 when it exists (another node was first)."""
        namespace = instance.metadata.namespace or "default"
        stored: Object = await self._custom.create_namespaced_custom_object(
            INSTANCES.group,
            INSTANCES.version,
            namespace,
            INSTANCES.plural,
            protected(instance).to_wire(),
        )
        return self._remember(stored)

    async def update(self, namespace: str, name: str, mutate: InstanceMutation) -> Instance | None:
        """Guarded read-modify-write; `mutate` returns the new Instance or None for no change.

        Returns the Instance as stored, or None when it no longer exists. The slots finalizer
        follows the written deviceUsage (`pool.protected`).
        """

        def on_wire(obj: Object) -> Object | None:
            changed = mutate(Instance.from_wire(obj))
            return None if changed is None else protected(changed).to_wire()

        stored = await self._guarded(namespace, name, on_wire)
        return None if stored is None else self._remember(stored)

    async def update_status(
        self, namespace: str, name: str, mutate: Callable[[Instance], InstanceStatus | None]
    ) -> None:
        """Guarded write of the status subresource; `mutate` returns the new status or None."""

        def on_wire(obj: Object) -> Object | None:
            status = mutate(Instance.from_wire(obj))
            if status is None:
                return None
            obj["status"] = status.model_dump(mode="json", by_alias=True, exclude_none=True)
            return obj

        stored = await self._guarded(namespace, name, on_wire, subresource="status")
        if stored is not None:
            self._remember(stored)

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

    async def _guarded(
        self, namespace: str, name: str, mutate: Mutation, *, subresource: str | None = None
    ) -> Object | None:
        """A guarded write deciding first on the cached Instance, and after a 409 on the newer
        one the watch may have brought."""
        return await self.writer.update(
            namespace,
            name,
            mutate,
            cached=self._wire(namespace, name),
            refresh=functools.partial(self._wire, namespace, name),
            subresource=subresource,
        )

    def _wire(self, namespace: str, name: str) -> Object | None:
        """The cached Instance as the API sent it, for a guarded write to decide on."""
        known = self._parsed.get((namespace, name))
        return None if known is None else known.to_wire()

    def _remember(self, stored: Object) -> Instance:
        self.reflector.assume(stored)  # a relist that misses it reports it deleted
        key = object_key(stored)
        known = self._parsed.get(key)
        if known is not None and known.metadata.resource_version == stored["metadata"].get(
            "resourceVersion"
        ):
            return known  # the version the cache holds (a write decided nothing new)
        instance = Instance.from_wire(stored)
        self._store(key, instance)
        return instance

    async def _observe(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        known = self._parsed.get(key)
        if kind == "DELETED":
            self._store(key, None)
            return
        if known is not None and known.metadata.resource_version == obj["metadata"].get(
            "resourceVersion"
        ):
            return  # our own write, already applied
        try:
            instance = Instance.from_wire(obj)
        except ValidationError as error:
            log.error("ignoring malformed Instance %s/%s: %s", *key, error)
            self._store(key, None)
            return
        self._store(key, instance)

    def _store(self, key: Key, instance: Instance | None) -> None:
        """Keep `instance` (None: forget it) and tell the subscribers of every topic it touches."""
        namespace, name = key
        before = self._parsed.pop(key, None)
        topics = {EVERYTHING, instance_topic(namespace, name)}
        if before is not None:
            of_configuration = (namespace, before.spec.configuration_name)
            siblings = self._by_configuration[of_configuration]
            del siblings[name]
            if not siblings:
                del self._by_configuration[of_configuration]
            topics.add(configuration_topic(*of_configuration))
        if instance is not None:
            of_configuration = (namespace, instance.spec.configuration_name)
            self._parsed[key] = instance
            self._by_configuration.setdefault(of_configuration, {})[name] = instance
            topics.add(configuration_topic(*of_configuration))
        elif before is None:
            return  # nothing was known, nothing changed
        for topic in topics:
            for subscription in self._subscribers.get(topic, ()):
                subscription.notify(key)
