"""Bring one Service to its desired state: create, update in place, or delete it."""

from __future__ import annotations

import logging

from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.builders import built_hash, updated_service
from akri.controller.context import Context, owned_by
from akri.kube.calls import call
from akri.kube.guarded import HTTP_CONFLICT, HTTP_NOT_FOUND
from akri.kube.reflector import Object

log = logging.getLogger(__name__)


async def apply_service(
    ctx: Context, namespace: str, name: str, owner_uid: str | None, desired: Object | None
) -> str | None:
    """Make Service `name` match `desired` (None: absent); returns what was done, if anything.

    A Service of that name the owner does not control is left alone: it is someone else's.
    """
    existing = ctx.caches.services.get(namespace, name)
    if existing is not None and not owned_by(existing, owner_uid):
        if desired is not None:
            log.warning("Service %s/%s exists and is not ours; leaving it", namespace, name)
        return None
    if desired is None:
        if existing is None:
            return None
        await _delete(ctx, existing)
        return f"deleted Service {name}"
    if existing is None:
        created = await call(ctx.core.create_namespaced_service, namespace, desired)
        ctx.caches.services.assume(created)
        return f"created Service {name}"
    if built_hash(existing) == built_hash(desired):
        return None
    body = updated_service(existing, desired)
    try:
        await call(ctx.core.replace_namespaced_service, name, namespace, body)
    except ApiException as error:
        if error.status != HTTP_CONFLICT:
            raise
        return None  # changed meanwhile: its watch event brings another pass
    return f"updated Service {name}"


async def _delete(ctx: Context, service: Object) -> None:
    metadata = service["metadata"]
    preconditions = {"uid": metadata["uid"]}
    try:
        await call(
            ctx.core.delete_namespaced_service,
            metadata["name"],
            metadata["namespace"],
            body={"preconditions": preconditions},
        )
    except ApiException as error:
        if error.status not in (HTTP_NOT_FOUND, HTTP_CONFLICT):
            raise
    ctx.caches.services.assume_deleted(service)
