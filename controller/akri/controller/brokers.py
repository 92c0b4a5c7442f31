"""Reconcile one Instance: its broker Pods (or Job) and its Service match the Configuration.

Reads only the caches; writes only the difference `plan_brokers` finds, with a uid
precondition on deletes (never a newer object of the same name). A broker that failed waits
for its backoff before it is created again, and so does one the API refused; the refusal is
also reported on the Configuration (`InvalidBrokerSpec`). What was done, and why, is recorded
as Events on the Instance.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.api import Configuration, Instance
from akri.controller.builders import (
    BrokerSpecError,
    broker_job,
    broker_labels,
    broker_pod,
    instance_service,
    is_running,
)
from akri.controller.cache import Cache
from akri.controller.conditions import BrokerOutcome
from akri.controller.context import CONFIGURATION, INSTANCE, Context, owned_by
from akri.controller.plan import Deletion, Plan, Reason, plan_brokers
from akri.controller.services import apply_service
from akri.dra.devices import instance_claim_template
from akri.dra.writer import GROUP as RESOURCE_GROUP
from akri.dra.writer import VERSION as RESOURCE_VERSION
from akri.kube.calls import call, error_message
from akri.kube.events import record_event
from akri.kube.guarded import HTTP_CONFLICT, HTTP_NOT_FOUND
from akri.kube.reflector import Object

log = logging.getLogger(__name__)

COMPONENT = "akri-controller"
REJECTED_STATUSES = frozenset({400, 403, 422})
"""The API refused the object itself (invalid, or forbidden by admission): fix the spec."""
SHOWN_NAMES = 5


@dataclass(frozen=True)
class BrokerKind:
    """How to write one kind of broker."""

    kind: Literal["Pod", "Job"]
    cache: Cache
    create: Callable[[str, Object], Awaitable[Object]]
    delete: Callable[[Object], Awaitable[None]]


def broker_kinds(ctx: Context) -> list[BrokerKind]:
    async def create_pod(namespace: str, body: Object) -> Object:
        return await call(ctx.core.create_namespaced_pod, namespace, body)

    async def delete_pod(pod: Object) -> None:
        metadata = pod["metadata"]
        await call(
            ctx.core.delete_namespaced_pod,
            metadata["name"],
            metadata["namespace"],
            body={"preconditions": {"uid": metadata["uid"]}},
        )

    async def create_job(namespace: str, body: Object) -> Object:
        return await call(ctx.batch.create_namespaced_job, namespace, body)

    async def delete_job(job: Object) -> None:
        metadata = job["metadata"]
        await call(
            ctx.batch.delete_namespaced_job,
            metadata["name"],
            metadata["namespace"],
            body={"propagationPolicy": "Background", "preconditions": {"uid": metadata["uid"]}},
        )

    return [
        BrokerKind("Pod", ctx.caches.pods, create_pod, delete_pod),
        BrokerKind("Job", ctx.caches.jobs, create_job, delete_job),
    ]


@dataclass
class Report:
    """What one reconcile did, for its Events, and when to look again."""

    done: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (type, reason) -> what
    recheck: list[float] = field(default_factory=list)

    def add(self, reason: str, what: str, *, warning: bool = False) -> None:
        self.done.setdefault(("Warning" if warning else "Normal", reason), []).append(what)


def _by_name(bodies: Iterable[Object | None]) -> dict[str, Object]:
    return {body["metadata"]["name"]: body for body in bodies if body is not None}


async def reconcile_instance(ctx: Context, namespace: str, name: str) -> None:
    obj = ctx.caches.instances.get(namespace, name)
    if obj is None:
        ctx.retries.forget(lambda key: key[:2] != (namespace, name))
        return
    instance = Instance.from_wire(obj)
    if instance.metadata.deletion_timestamp is not None:
        await _retire(ctx, obj, instance)
        return
    configuration_obj = ctx.caches.configurations.get(namespace, instance.spec.configuration_name)
    if configuration_obj is None or configuration_obj["metadata"].get("deletionTimestamp"):
        return  # garbage collection takes the Instance (and its brokers) with its Configuration
    configuration = Configuration.from_wire(configuration_obj)
    report = Report()
    try:
        dra = ctx.dra
        desired = {
            "Pod": _by_name(
                broker_pod(configuration, instance, n, dra=dra) for n in instance.spec.nodes
            ),
            "Job": _by_name([broker_job(configuration, instance, dra=dra)]),
        }
    except BrokerSpecError as error:  # leave working brokers be until the spec is fixed
        note_outcome(ctx, configuration, f"broker spec: {error}")
        return
    if ctx.dra:
        await _claim_template(ctx, instance, report)
    now = datetime.now(UTC)
    for kind in broker_kinds(ctx):
        actual = [
            o
            for o in kind.cache.by(INSTANCE, (namespace, name))
            if owned_by(o, instance.metadata.uid)
        ]
        plan = plan_brokers(
            desired[kind.kind], actual, now, ctx.tuning.pending_grace, instance.spec.nodes
        )
        await _execute(ctx, kind, configuration, instance, plan, report)
    await _instance_service(ctx, configuration, instance, report)
    await _record(ctx, obj, report)
    if report.recheck:
        ctx.queue.add_after((INSTANCE, namespace, name), min(report.recheck))


async def _retire(ctx: Context, obj: Object, instance: Instance) -> None:
    """Delete the brokers of an Instance being deleted.

    Its slots finalizer keeps it until no container holds a slot (docs/design.md §5.5), and
    garbage collection would take the brokers, which hold slots, only after it is gone.
    """
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    report = Report()
    for kind in broker_kinds(ctx):
        for broker in kind.cache.by(INSTANCE, (namespace, name)):
            if owned_by(broker, instance.metadata.uid) and not broker["metadata"].get(
                "deletionTimestamp"
            ):
                deletion = Deletion(broker, Reason.NOT_WANTED, "the Instance is being deleted")
                await _delete(ctx, kind, instance, deletion, report)
    await _record(ctx, obj, report)


async def _execute(
    ctx: Context,
    kind: BrokerKind,
    configuration: Configuration,
    instance: Instance,
    plan: Plan,
    report: Report,
) -> None:
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    for running in plan.running:
        ctx.retries.succeeded((namespace, name, running))
    if plan.recheck_after is not None:
        report.recheck.append(plan.recheck_after)
    ready = []
    for body in plan.create:
        wait = ctx.retries.wait((namespace, name, body["metadata"]["name"]))
        if wait > 0:
            report.recheck.append(wait)
        else:
            ready.append(body)
    await asyncio.gather(
        *(_delete(ctx, kind, instance, deletion, report) for deletion in plan.delete),
        *(_create(ctx, kind, configuration, instance, body, report) for body in ready),
    )


async def _delete(
    ctx: Context, kind: BrokerKind, instance: Instance, deletion: Deletion, report: Report
) -> None:
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    what = f"{kind.kind} {deletion.name} ({deletion.detail})"
    if deletion.failed:
        uid = deletion.obj["metadata"].get("uid")
        delay = ctx.retries.failed((namespace, name, deletion.name), uid)
        report.recheck.append(delay)
        what += f", recreating in {delay:.3g}s"
    try:
        async with ctx.in_flight:
            await kind.delete(deletion.obj)
    except ApiException as error:
        if error.status not in (HTTP_NOT_FOUND, HTTP_CONFLICT):
            raise
    kind.cache.assume_deleted(deletion.obj)
    report.add(deletion.reason, what, warning=deletion.failed)


async def _create(
    ctx: Context,
    kind: BrokerKind,
    configuration: Configuration,
    instance: Instance,
    body: Object,
    report: Report,
) -> None:
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    broker = body["metadata"]["name"]
    try:
        async with ctx.in_flight:
            created = await kind.create(namespace, body)
    except ApiException as error:
        if error.status == HTTP_CONFLICT:
            return  # created before (the watch is behind): the cache catches up
        delay = ctx.retries.failed((namespace, name, broker))
        report.recheck.append(delay)
        message = error_message(error)
        if error.status in REJECTED_STATUSES:
            note_outcome(ctx, configuration, f"{kind.kind} {broker} was refused: {message}")
        what = f"{kind.kind} {broker}: {message}; retrying in {delay:.3g}s"
        report.add("BrokerCreateFailed", what, warning=True)
        return
    kind.cache.assume(created)
    note_outcome(ctx, configuration, None)
    report.add("BrokerCreated", f"{kind.kind} {broker}")


async def _claim_template(ctx: Context, instance: Instance, report: Report) -> None:
    """DRA mode: the Instance's ResourceClaimTemplate exists (one slot of it per claim), for
    its brokers and for users' per-Instance requests; it goes with the Instance. Its spec
    follows only from the Instance's names, so an existing one is never rewritten."""
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    templates = ctx.caches.claim_templates
    if templates is None or templates.get(namespace, name) is not None:
        return
    body = instance_claim_template(instance, broker_labels(instance))
    try:
        async with ctx.in_flight:
            created = await call(
                ctx.custom.create_namespaced_custom_object,
                RESOURCE_GROUP,
                RESOURCE_VERSION,
                namespace,
                "resourceclaimtemplates",
                body,
            )
    except ApiException as error:
        if error.status == HTTP_CONFLICT:
            return  # made before (the watch is behind), or someone else's: left alone
        report.add("ClaimTemplateFailed", f"{name}: {error_message(error)}", warning=True)
        report.recheck.append(ctx.retries.failed((namespace, name, "claim-template")))
        return
    templates.assume(created)
    ctx.retries.succeeded((namespace, name, "claim-template"))
    report.add("ClaimTemplateCreated", f"ResourceClaimTemplate {name}")


async def _instance_service(
    ctx: Context, configuration: Configuration, instance: Instance, report: Report
) -> None:
    """`<instance>-svc` exists while at least one of the Instance's brokers runs."""
    namespace, name = instance.metadata.namespace or "default", instance.metadata.name or ""
    running = any(is_running(p) for p in ctx.caches.pods.by(INSTANCE, (namespace, name)))
    try:
        desired = instance_service(configuration, instance) if running else None
    except BrokerSpecError as error:
        note_outcome(ctx, configuration, f"instance service spec: {error}")
        return
    service = naming.instance_service_name(name)
    try:
        async with ctx.in_flight:
            done = await apply_service(ctx, namespace, service, instance.metadata.uid, desired)
    except ApiException as error:
        report.add("ServiceFailed", f"Service {service}: {error_message(error)}", warning=True)
        report.recheck.append(ctx.retries.failed((namespace, name, service)))
        return
    ctx.retries.succeeded((namespace, name, service))
    if done is not None:
        report.add("ServiceChanged", done)


def note_outcome(ctx: Context, configuration: Configuration, problem: str | None) -> None:
    """Remember how creating a broker of `configuration` went; a change updates its status.

    The first problem of a generation is kept: brokers of several Instances failing with
    messages that differ only in their names must not rewrite the status in turn.
    """
    namespace = configuration.metadata.namespace or "default"
    key = (namespace, configuration.metadata.name or "")
    outcome = BrokerOutcome(configuration.metadata.generation, problem)
    known = ctx.outcomes.get(key)
    if (
        known is not None
        and known.problem is not None
        and problem is not None
        and known.generation == outcome.generation
    ):
        return
    if known != outcome:
        ctx.outcomes[key] = outcome
        ctx.queue.add((CONFIGURATION, *key))


async def _record(ctx: Context, instance: Object, report: Report) -> None:
    for (kind, reason), what in report.done.items():
        shown = "; ".join(what[:SHOWN_NAMES])
        more = f"; and {len(what) - SHOWN_NAMES} more" if len(what) > SHOWN_NAMES else ""
        await record_event(
            ctx.core,
            instance,
            reason,
            f"{shown}{more}",
            component=COMPONENT,
            kind="Warning" if kind == "Warning" else "Normal",
        )
