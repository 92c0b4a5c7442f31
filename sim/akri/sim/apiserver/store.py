"""Object storage: one global resourceVersion counter, objects per kind, a watch hub per kind.

No semantics beyond versioning live here (see `operations`). Stored objects are never mutated
after they are written, so watch events, list results and the verbs that build an object's
next version beside it share them without copying.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from akri.json_copy import copy_json
from akri.sim.apiserver.watchcache import ADDED, DELETED, MODIFIED, WatchEvent, WatchHub

JSON = dict[str, Any]
Key = tuple[str, str]  # (group, plural)
Listener = Callable[[Key, WatchEvent], None]

DEFAULT_HISTORY = 1000


def identity(obj: JSON) -> tuple[str, str]:
    metadata = obj["metadata"]
    return (metadata.get("namespace", ""), metadata["name"])


class Store:
    """Every object of every kind; all writes bump the one global revision."""

    kept = True
    """Whether writes are kept (False: a `DryRun` view)."""

    def __init__(self, history_limit: int = DEFAULT_HISTORY) -> None:
        self._revision = 0
        self._history_limit = history_limit
        self._objects: dict[Key, dict[tuple[str, str], JSON]] = {}
        self._hubs: dict[Key, WatchHub] = {}
        self._uids: dict[str, tuple[Key, tuple[str, str]]] = {}
        self.listeners: list[Listener] = []

    @property
    def revision(self) -> int:
        return self._revision

    def add_kind(self, key: Key) -> None:
        if key not in self._objects:
            self._objects[key] = {}
            self._hubs[key] = WatchHub(self._history_limit)

    def remove_kind(self, key: Key) -> None:
        """Delete every object of a kind (with DELETED events) and end its watches."""
        for namespace, name in list(self._objects.get(key, {})):
            self.delete(key, namespace, name)
        self._objects.pop(key, None)
        hub = self._hubs.pop(key, None)
        if hub is not None:
            hub.end_all()

    def hub(self, key: Key) -> WatchHub:
        return self._hubs[key]

    def peek(self, key: Key, namespace: str, name: str) -> JSON | None:
        """The stored object itself: read-only."""
        return self._objects[key].get((namespace, name))

    def objects(self, key: Key, namespace: str | None = None) -> list[JSON]:
        """Stored objects (read-only) sorted by namespace and name."""
        bucket = self._objects[key]
        return [bucket[k] for k in sorted(bucket) if namespace is None or k[0] == namespace]

    def everything(self) -> Iterator[tuple[Key, JSON]]:
        for key, bucket in list(self._objects.items()):
            for obj in list(bucket.values()):
                yield key, obj

    def by_uid(self, uid: str) -> JSON | None:
        location = self._uids.get(uid)
        return self._objects[location[0]].get(location[1]) if location else None

    def create(self, key: Key, obj: JSON) -> JSON:
        stored = self._stamp(obj)
        self._objects[key][identity(stored)] = stored
        self._uids[stored["metadata"]["uid"]] = (key, identity(stored))
        self._publish(key, WatchEvent(ADDED, stored, self._revision))
        return stored

    def update(self, key: Key, obj: JSON) -> JSON:
        previous = self._objects[key][identity(obj)]
        stored = self._stamp(obj)
        self._objects[key][identity(stored)] = stored
        self._publish(key, WatchEvent(MODIFIED, stored, self._revision, previous))
        return stored

    def delete(self, key: Key, namespace: str, name: str, final: JSON | None = None) -> JSON:
        """Remove an object; its DELETED event shows `final` (default: the stored state)."""
        removed = self._objects[key].pop((namespace, name))
        self._uids.pop(removed["metadata"].get("uid", ""), None)
        final = self._stamp(copy_json(final if final is not None else removed))
        self._publish(key, WatchEvent(DELETED, final, self._revision))
        return final

    def _stamp(self, obj: JSON) -> JSON:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        return obj

    def _publish(self, key: Key, event: WatchEvent) -> None:
        self._hubs[key].publish(event)
        for listener in self.listeners:
            listener(key, event)


class DryRun(Store):
    """A store's view for `dryRun=All`: reads see the store, writes are worked out and dropped.

    A write answers what it would have stored, but consumes no resourceVersion and sends no
    watch event (so no controller, collector or kubelet reacts), as kube-apiserver's dry-run
    storage does: a created object has no resourceVersion, an updated or deleted one keeps its
    current one.
    """

    kept = False

    def __init__(self, store: Store) -> None:
        self._real = store
        self._objects = store._objects
        self._hubs = store._hubs
        self._uids = store._uids
        self.listeners = []

    @property
    def revision(self) -> int:
        return self._real.revision

    def add_kind(self, key: Key) -> None:
        """A dry-run CRD serves nothing new."""

    def remove_kind(self, key: Key) -> None:
        """A dry-run CRD deletion removes nothing."""

    def create(self, key: Key, obj: JSON) -> JSON:
        obj["metadata"].pop("resourceVersion", None)
        return obj

    def update(self, key: Key, obj: JSON) -> JSON:
        obj["metadata"]["resourceVersion"] = self._objects[key][identity(obj)]["metadata"][
            "resourceVersion"
        ]
        return obj

    def delete(self, key: Key, namespace: str, name: str, final: JSON | None = None) -> JSON:
        return copy_json(final if final is not None else self._objects[key][(namespace, name)])
