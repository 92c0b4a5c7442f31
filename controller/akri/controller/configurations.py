"""Reconcile one Configuration: its `<configuration>-svc` and the status fields the controller owns.

The Service exists while any broker of the Configuration runs. The status (instanceCount,
InvalidBrokerSpec, ControllerWriteRefused, the withdrawal of gone nodes' rows) is written with a
guarded update of the status subresource, only when it changes; a new broker problem or write
refusal, or its resolution, is also recorded as an Event.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.api import Configuration, ConfigurationStatus
from akri.controller.brokers import COMPONENT
from akri.controller.builders import BrokerSpecError, configuration_service, is_running
from akri.controller.conditions import updated_status
from akri.controller.context import CONFIGURATION, Context, WorkKey
from akri.controller.refusals import ConfigurationKey
from akri.controller.services import apply_service
from akri.kube.calls import error_message
from akri.kube.events import record_event
from akri.kube.guarded import HTTP_NOT_FOUND, CustomResource, GuardedWriter

log = logging.getLogger(__name__)

CONFIGURATIONS = CustomResource(naming.GROUP, naming.VERSION, Configuration.plural)


async def reconcile_configuration(ctx: Context, namespace: str, name: str) -> None:
    obj = ctx.caches.configurations.get(namespace, name)
    if obj is None:
        ctx.outcomes.pop((namespace, name), None)
        ctx.refusals.forget((namespace, name))
        return
    configuration = Configuration.from_wire(obj)
    key = (namespace, name)
    running = any(is_running(p) for p in ctx.caches.pods.by(CONFIGURATION, key))
    problem = None
    try:
        desired = configuration_service(configuration) if running else None
    except BrokerSpecError as error:
        problem = f"configuration service spec: {error}"
        desired = None
    service = naming.configuration_service_name(name)
    try:
        async with ctx.in_flight:
            done = await apply_service(ctx, namespace, service, configuration.metadata.uid, desired)
    except ApiException as error:
        done = None
        problem = f"Service {service}: {error_message(error)}"
    if done is not None:
        await _event(ctx, obj, "ServiceChanged", done)
    if problem is not None:
        await _event(ctx, obj, "ServiceFailed", problem, warning=True)
    await _write_status(ctx, configuration, obj)


async def _write_status(ctx: Context, configuration: Configuration, obj: dict[str, Any]) -> None:
    namespace, name = configuration.metadata.namespace or "default", configuration.metadata.name
    assert name is not None
    key = (namespace, name)
    count = len(ctx.caches.instances.by(CONFIGURATION, key))
    outcome = ctx.outcomes.get(key)
    refused = ctx.refusals.message(key)
    now = datetime.now(UTC)
    generation = configuration.metadata.generation
    gone = await _gone_nodes(ctx, configuration)

    def update(stored: dict[str, Any] | None) -> dict[str, Any] | None:
        return updated_status(
            stored,
            instance_count=count,
            outcome=outcome,
            live=lambda node: node not in gone,
            generation=generation,
            now=now,
            refused=refused,
        )

    if update(obj.get("status")) is None:
        return
    before = (obj.get("status") or {}).get("conditions")

    def mutate(current: dict[str, Any]) -> dict[str, Any] | None:
        if current["metadata"].get("uid") != configuration.metadata.uid:
            return None
        status = update(current.get("status"))
        if status is None:
            return None
        current["status"] = status
        return current

    writer = GuardedWriter(ctx.api_client, CONFIGURATIONS)
    async with ctx.in_flight:
        stored = await writer.update(namespace, name, mutate, cached=obj, subresource="status")
    after = ((stored or {}).get("status") or {}).get("conditions")
    if outcome is not None and after != before and stored is not None:
        if outcome.problem is not None:
            await _event(ctx, stored, "InvalidBrokerSpec", outcome.problem, warning=True)
        else:
            await _event(ctx, stored, "BrokerSpecAccepted", "brokers are created again")


async def note_refusal(
    ctx: Context, key: WorkKey, configuration: ConfigurationKey | None, refusal: str | None
) -> None:
    """Record that the API refuses `key`'s work for `configuration` (`refusal`, its message)
    or no longer does (None). A change is an Event on the Configuration at once, and its
    ControllerWriteRefused condition with the next reconcile of it, queued here."""
    if refusal is None:
        configuration = ctx.refusals.configuration_of(key)
    if not ctx.refusals.note(key, configuration, refusal) or configuration is None:
        return
    obj = ctx.caches.configurations.get(*configuration)
    if obj is None:
        return
    ctx.queue.add((CONFIGURATION, *configuration))
    if refusal is not None:
        await _event(ctx, obj, "WriteRefused", refusal, warning=True)
    else:
        await _event(ctx, obj, "WriteAccepted", "the API accepts the controller's writes again")


async def _gone_nodes(ctx: Context, configuration: Configuration) -> set[str]:
    """The nodes with a row in the status that are lost, deleted or never existed.

    A node the cache does not know is asked for: the Node watch may lag behind the agent's
    write, and withdrawing a live node's row would hide its report until its view changes.
    """
    gone = set()
    for row in (configuration.status or ConfigurationStatus()).nodes:
        if ctx.caches.nodes.get("", row.node) is not None:
            if ctx.nodes.lost_in(row.node) == 0.0:
                gone.add(row.node)
        elif not await _node_exists(ctx, row.node):
            gone.add(row.node)
    return gone


async def _node_exists(ctx: Context, name: str) -> bool:
    try:
        async with ctx.in_flight:
            await ctx.core.read_node(name)
    except ApiException as error:
        if error.status == HTTP_NOT_FOUND:
            return False
        raise
    return True


async def _event(
    ctx: Context, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False
) -> None:
    await record_event(
        ctx.core, obj, reason, message, component=COMPONENT, kind="Warning" if warning else "Normal"
    )
