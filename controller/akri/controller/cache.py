"""A reflector's objects with indexes, plus the controller's own writes the watch has not shown yet.

Reconciles read only from here, so a steady state costs no API requests. Right after the
controller creates or deletes an object its watch may lag; without remembering that write
("assuming" it, as client-go's expectations do) the next reconcile would create the object a
second time or delete it again. An assumption lasts until the watch reports that object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Iterable, Mapping

from akri.kube.reflector import EventType, Key, ListFunction, Object, Reflector, object_key

IndexFunction = Callable[[Object], Iterable[Hashable]]
OnChange = Callable[[EventType, Object], Awaitable[None]]


class Cache:
    def __init__(
        self,
        list_function: ListFunction,
        on_change: OnChange,
        indexes: Mapping[str, IndexFunction] | None = None,
        *,
        label_selector: str | None = None,
    ) -> None:
        self._on_change = on_change
        self._index_functions = dict(indexes or {})
        self._indexes: dict[str, dict[Hashable, set[Key]]] = {n: {} for n in self._index_functions}
        self._indexed: dict[Key, dict[str, list[Hashable]]] = {}
        self._assumed: dict[Key, Object | None] = {}  # None: assumed deleted
        self.reflector = (
            Reflector(list_function, self._changed)
            if label_selector is None
            else Reflector(list_function, self._changed, label_selector=label_selector)
        )

    async def run(self) -> None:
        await self.reflector.run()

    @property
    def synced(self) -> bool:
        return self.reflector.synced.is_set()

    async def wait_synced(self) -> None:
        await self.reflector.synced.wait()

    async def _changed(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        self._assumed.pop(key, None)
        self._unindex(key)
        if kind != "DELETED":
            values = {name: list(fn(obj)) for name, fn in self._index_functions.items()}
            self._indexed[key] = values
            for name, keys in values.items():
                for value in keys:
                    self._indexes[name].setdefault(value, set()).add(key)
        await self._on_change(kind, obj)

    def _unindex(self, key: Key) -> None:
        for name, values in self._indexed.pop(key, {}).items():
            for value in values:
                keys = self._indexes[name].get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._indexes[name][value]

    def get(self, namespace: str, name: str) -> Object | None:
        key = (namespace, name)
        if key in self._assumed:
            return self._assumed[key]
        return self.reflector.objects.get(key)

    def by(self, index: str, value: Hashable) -> list[Object]:
        """Objects whose index function yields `value`, assumptions included."""
        keys = self._indexes[index].get(value, set())
        function = self._index_functions[index]
        return self._view(keys, lambda obj: value in set(function(obj)))

    def _view(self, keys: Iterable[Key], matches: Callable[[Object], bool]) -> list[Object]:
        found = {
            key: obj
            for key in keys
            if key not in self._assumed and (obj := self.reflector.objects.get(key)) is not None
        }
        for key, assumed in self._assumed.items():
            if assumed is not None and matches(assumed):
                found[key] = assumed
        return list(found.values())

    def assume(self, obj: Object) -> None:
        """The controller created `obj` (as the API returned it); show it until the watch does."""
        key = object_key(obj)
        if not self._seen(key, obj):
            self._assumed[key] = obj
            self.reflector.assume(obj)  # a relist that misses it reports it deleted

    def assume_deleted(self, obj: Object) -> None:
        """The controller deleted `obj`; hide it until the watch reports the deletion."""
        key = object_key(obj)
        if self._seen(key, obj):
            self._assumed[key] = None

    def _seen(self, key: Key, obj: Object) -> bool:
        """Whether the watch has already shown this very object (same uid)."""
        known = self.reflector.objects.get(key)
        return known is not None and known["metadata"].get("uid") == obj["metadata"].get("uid")
