"""Reconcile one node: once it is lost, take it out of every Instance and free its slots, and
withdraw its reports (its rows in the status of every Instance and Configuration).

The write is the same resourceVersion-guarded read-modify-write the agents use
(`GuardedWriter` + `akri.slots.scrub_node`), so it never undoes an agent's concurrent claim.
An Instance left with no node and no held slot is deleted with a resourceVersion precondition:
if an agent added itself back meanwhile, the delete fails and the Instance stays. One whose
slots other nodes' containers still hold stays until their agents free them.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.api import INSTANCE_NODE_PROBLEMS, Instance, InstanceStatus
from akri.api.pool import view
from akri.controller.brokers import COMPONENT
from akri.controller.context import CONFIGURATION, NODE, Context
from akri.controller.nodes import NodeWatch
from akri.kube.calls import call
from akri.kube.events import record_event
from akri.kube.guarded import (
    HTTP_CONFLICT,
    HTTP_NOT_FOUND,
    CustomResource,
    GuardedWriter,
    Object,
)
from akri.node_reports import aggregated, withdrawn
from akri.slots import disposable, finalizers, scrub_node

log = logging.getLogger(__name__)

INSTANCES = CustomResource(naming.GROUP, naming.VERSION, Instance.plural)
DELETE_ATTEMPTS = 5


def scrubbed(obj: Object, node: str) -> Object | None:
    """`obj` without `node` (out of nodes, its slots freed); None when it has nothing of it.

    The slots finalizer follows: an Instance whose last holder was the lost node may go.
    """
    instance = Instance.from_wire(obj)
    before = view(instance)
    after = scrub_node(before, node)
    if after == before:
        return None
    obj["spec"]["nodes"] = list(after.nodes)
    obj["spec"]["deviceUsage"] = dict(after.usage)
    wanted = finalizers(after, instance.metadata.finalizers)
    if wanted != instance.metadata.finalizers:
        obj["metadata"]["finalizers"] = wanted
    return obj


def without_reports(obj: Object, node: str) -> Object | None:
    """`obj` without `node`'s row in its status (its conditions computed again from the rows
    left); None when it has none."""
    status = InstanceStatus.model_validate(obj.get("status") or {})
    rows = withdrawn(status.nodes, lambda reporter: reporter != node)
    if rows == status.nodes:
        return None
    conditions = aggregated(
        status.conditions,
        rows,
        INSTANCE_NODE_PROBLEMS,
        ready=False,
        generation=obj["metadata"].get("generation"),
        now=datetime.now(UTC),
    )
    wire = status.model_copy(update={"nodes": rows, "conditions": conditions})
    obj["status"] = wire.model_dump(mode="json", by_alias=True, exclude_none=True)
    return obj


async def reconcile_node(ctx: Context, watch: NodeWatch, name: str) -> None:
    watch.observe(name, ctx.caches.nodes.get("", name))
    lost_in = watch.lost_in(name)
    if lost_in is None:
        return
    if lost_in > 0:
        ctx.queue.add_after((NODE, "", name), lost_in)
        return
    for namespace, configuration in list(ctx.caches.configurations.reflector.objects):
        ctx.queue.add((CONFIGURATION, namespace, configuration))  # withdraw the node's reports
    writer = GuardedWriter(ctx.api_client, INSTANCES)
    for obj in ctx.caches.instances.by(NODE, name):
        metadata = obj["metadata"]
        namespace, instance = metadata["namespace"], metadata["name"]
        wrote = False

        def mutate(current: Object) -> Object | None:
            nonlocal wrote
            result = scrubbed(current, name)
            wrote = result is not None
            return result

        async with ctx.in_flight:
            stored = await writer.update(namespace, instance, mutate, cached=obj)
            await writer.update(
                namespace,
                instance,
                lambda current: without_reports(current, name),
                cached=obj,
                subresource="status",
            )
        if stored is None or not wrote:
            continue
        log.info("node %s is lost: removed from Instance %s/%s", name, namespace, instance)
        await _event(ctx, stored, f"node {name} is lost: removed from nodes, its slots freed")
        if _disposable(stored):
            await _delete_if_disposable(ctx, writer, stored)


def _disposable(obj: Object) -> bool:
    """No node sees the device and no node holds a slot (a live Instance only)."""
    instance = Instance.from_wire(obj)
    return instance.metadata.deletion_timestamp is None and disposable(view(instance))


async def _delete_if_disposable(ctx: Context, writer: GuardedWriter, obj: Object) -> None:
    """Delete `obj` while nothing keeps it; re-read and decide again on a conflict."""
    current: Object | None = obj
    for _ in range(DELETE_ATTEMPTS):
        if current is None or not _disposable(current):
            return
        metadata = current["metadata"]
        preconditions = {"resourceVersion": metadata["resourceVersion"], "uid": metadata["uid"]}
        try:
            async with ctx.in_flight:
                await call(
                    ctx.custom.delete_namespaced_custom_object,
                    naming.GROUP,
                    naming.VERSION,
                    metadata["namespace"],
                    Instance.plural,
                    metadata["name"],
                    body={"preconditions": preconditions},
                )
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return
            if error.status != HTTP_CONFLICT:
                raise
            current = await writer.read(metadata["namespace"], metadata["name"])
            continue
        ctx.caches.instances.assume_deleted(current)
        await _event(ctx, current, "no node sees the device any more: Instance deleted")
        return
    log.warning("Instance %s kept changing; not deleted", obj["metadata"]["name"])


async def _event(ctx: Context, instance: dict[str, Any], message: str) -> None:
    await record_event(ctx.core, instance, "NodeLost", message, component=COMPONENT)
