"""The one way akri-py changes a shared object: read, decide, write with a resourceVersion guard.

Every write of an Instance's `deviceUsage` and `nodes` (agents on every node and the
controller alike) goes through `GuardedWriter.update`: the PUT carries the resourceVersion
the decision was based on, so a concurrent writer makes it fail with 409 Conflict instead of
being overwritten; the writer then re-reads and decides again. Akri's merge patch without a
precondition lost slots exactly there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.json_copy import copy_json

log = logging.getLogger(__name__)

Object = dict[str, Any]
Mutation = Callable[[Object], Object | None]  # new object, or None when nothing needs to change

HTTP_NOT_FOUND = 404
HTTP_CONFLICT = 409


class UpdateConflict(Exception):
    """Still conflicting after every attempt: the caller reports it and retries later."""


@dataclass(frozen=True)
class CustomResource:
    group: str
    version: str
    plural: str


class GuardedWriter:
    """Guarded read-modify-write of one namespaced custom resource kind."""

    def __init__(
        self,
        api_client: client.ApiClient,
        resource: CustomResource,
        *,
        attempts: int = 20,
        backoff: Callable[[], Backoff] = lambda: Backoff(initial=0.005, maximum=0.5),
        on_conflict: Callable[[], None] = lambda: None,
    ) -> None:
        self._api = client.CustomObjectsApi(api_client)
        self._resource = resource
        self._attempts = attempts
        self._backoff = backoff
        self._on_conflict = on_conflict

    async def read(self, namespace: str, name: str) -> Object | None:
        r = self._resource
        try:
            obj: Object = await self._api.get_namespaced_custom_object(
                r.group, r.version, namespace, r.plural, name
            )
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return None
            raise
        return obj

    async def update(
        self,
        namespace: str,
        name: str,
        mutate: Mutation,
        *,
        cached: Object | None = None,
        refresh: Callable[[], Object | None] | None = None,
        subresource: str | None = None,
    ) -> Object | None:
        """Apply `mutate` until a write succeeds; returns the stored object (None: it is gone).

        `cached` (e.g. from a reflector) saves the first read; a stale copy only costs one 409.
        After a 409, `refresh` (the reflector's copy now) is asked first: a version that has
        not met a 409 yet is decided on instead of reading the object again, and the watch
        usually brings the newer version during the backoff. `mutate` gets a private copy and
        must be a pure decision on it: it runs again on every conflict. When it returns None
        nothing is written and the object it was given is returned.
        """
        backoff = self._backoff()
        current = cached
        conflicted: set[str] = set()
        for _ in range(self._attempts):
            if current is None:
                current = await self.read(namespace, name)
                if current is None:
                    return None
            desired = mutate(copy_json(current))
            if desired is None:
                return current
            desired["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            try:
                return await self._replace(namespace, name, desired, subresource)
            except ApiException as error:
                if error.status == HTTP_NOT_FOUND:
                    return None
                if error.status != HTTP_CONFLICT:
                    raise
            self._on_conflict()
            log.debug("conflict writing %s/%s, re-reading", namespace, name)
            conflicted.add(current["metadata"]["resourceVersion"])
            await asyncio.sleep(backoff.next_delay())
            current = refresh() if refresh is not None else None
            if current is not None and current["metadata"].get("resourceVersion") in conflicted:
                current = None  # nothing newer known here: read it
        raise UpdateConflict(f"{self._resource.plural} {namespace}/{name}: still conflicting")

    async def _replace(
        self, namespace: str, name: str, body: Object, subresource: str | None
    ) -> Object:
        r = self._resource
        args = (r.group, r.version, namespace, r.plural, name, body)
        if subresource == "status":
            stored: Object = await self._api.replace_namespaced_custom_object_status(*args)
        elif subresource is None:
            stored = await self._api.replace_namespaced_custom_object(*args)
        else:
            raise ValueError(f"unsupported subresource {subresource!r}")
        return stored
