"""Background garbage collection and namespace termination.

Like the kube-controller-manager's garbage collector, this runs after the fact: deleting an
owner returns at once, and dependents whose owners are all gone disappear shortly afterwards
(transitively). Orphan and Foreground propagation are honoured through their finalizers, and a
terminating namespace is emptied and then removed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from akri.sim.apiserver.operations import (
    BACKGROUND,
    FOREGROUND_FINALIZER,
    ORPHAN_FINALIZER,
    DeleteOptions,
    Operations,
)
from akri.sim.apiserver.resources import ResourceType
from akri.sim.apiserver.store import Key
from akri.sim.apiserver.watchcache import DELETED, WatchEvent

JSON = dict[str, Any]
log = logging.getLogger(__name__)

_NAMESPACES: Key = ("", "namespaces")


class GarbageCollector:
    """Wakes on relevant changes and runs passes until nothing more is collectable."""

    def __init__(self, operations: Operations) -> None:
        self._operations = operations
        self._wake = asyncio.Event()
        operations.store.listeners.append(self._notice)

    def _notice(self, key: Key, event: WatchEvent) -> None:
        """Wake for a change a pass may act on. A dependent whose owners all exist and are not
        being deleted is not one: a thousand creates must not be a thousand passes over
        everything (an owner that goes later wakes the collector itself)."""
        meta = event.obj["metadata"]
        if event.type == DELETED or meta.get("deletionTimestamp") or self._orphaned(meta):
            self._wake.set()

    def _orphaned(self, meta: JSON) -> bool:
        store = self._operations.store
        for reference in meta.get("ownerReferences") or []:
            owner = store.by_uid(reference.get("uid", ""))
            if owner is None or owner["metadata"].get("deletionTimestamp"):
                return True
        return False

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                if self.collect():
                    self._wake.set()  # another pass: this one may have made more collectable
            except Exception:  # one bad object must not stop collection for the server's life
                log.exception("garbage collection pass failed")

    def _kinds(self) -> dict[Key, ResourceType]:
        return {kind.key: kind for kind in self._operations.registry.storage_types()}

    def collect(self) -> bool:
        """One pass over every object; True when it changed something."""
        kinds = self._kinds()
        store = self._operations.store
        changed = False
        dependents: dict[str, int] = {}
        for key, obj in store.everything():
            references = obj["metadata"].get("ownerReferences") or []
            for reference in references:
                dependents[reference.get("uid", "")] = (
                    dependents.get(reference.get("uid", ""), 0) + 1
                )
            if references and key in kinds:
                changed |= self._settle_dependent(kinds[key], obj, references)
        for key, obj in store.everything():
            meta = obj["metadata"]
            if not meta.get("deletionTimestamp") or key not in kinds:
                continue
            finalizers = meta.get("finalizers") or []
            waiting = dependents.get(meta["uid"], 0)
            if ORPHAN_FINALIZER in finalizers and not waiting:
                self._operations.finalize(kinds[key], obj, ORPHAN_FINALIZER)
                changed = True
            elif FOREGROUND_FINALIZER in finalizers and not waiting:
                self._operations.finalize(kinds[key], obj, FOREGROUND_FINALIZER)
                changed = True
            elif key == _NAMESPACES:
                changed |= self._empty_namespace(kinds, obj)
        return changed

    def _settle_dependent(self, kind: ResourceType, obj: JSON, references: list[JSON]) -> bool:
        """Delete a dependent whose owners are all gone; drop references to vanished owners."""
        store = self._operations.store
        owners = [store.by_uid(reference.get("uid", "")) for reference in references]
        if any(_is_deleting(owner, FOREGROUND_FINALIZER) for owner in owners):
            return self._delete(kind, obj)
        keep = [
            reference
            for reference, owner in zip(references, owners, strict=True)
            if owner is not None and not _is_deleting(owner, ORPHAN_FINALIZER)
        ]
        if len(keep) == len(references):
            return False
        if not keep and all(owner is None for owner in owners):
            return self._delete(kind, obj)
        meta = obj["metadata"]
        self._operations.patch(
            kind,
            meta.get("namespace", ""),
            meta["name"],
            "application/merge-patch+json",
            {"metadata": {"ownerReferences": keep or None}},
        )
        return True

    def _delete(self, kind: ResourceType, obj: JSON) -> bool:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp"):
            return False
        self._operations.delete(
            kind, meta.get("namespace", ""), meta["name"], DeleteOptions(BACKGROUND, meta["uid"])
        )
        return True

    def _empty_namespace(self, kinds: dict[Key, ResourceType], namespace: JSON) -> bool:
        name = namespace["metadata"]["name"]
        remaining = False
        changed = False
        for kind in kinds.values():
            if not kind.namespaced:
                continue
            for obj in self._operations.store.objects(kind.key, name):
                remaining = True
                changed |= self._delete(kind, obj)
        if not remaining:
            self._operations.finish_namespace(namespace)
            return True
        return changed


def _is_deleting(owner: JSON | None, finalizer: str) -> bool:
    if owner is None:
        return False
    meta = owner["metadata"]
    return bool(meta.get("deletionTimestamp")) and finalizer in (meta.get("finalizers") or [])
