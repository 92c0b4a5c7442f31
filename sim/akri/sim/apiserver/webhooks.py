"""Validating admission webhooks: the ValidatingWebhookConfigurations stored, called per write.

Each webhook whose rules match the request (operation, group, version, resource and
subresource, scope) and whose `namespaceSelector` and `objectSelector` match is sent an
AdmissionReview v1 over HTTPS, trusting only its `caBundle`, within `timeoutSeconds` (10 by
default). A denial is refused as the API server refuses it; a webhook that cannot be reached
or answers nonsense fails the request under `failurePolicy: Fail` (the default) and is skipped
under `Ignore`. A `service` reference is reached at a ready pod behind the Service, on the port
its targetPort names (`endpoints`), its certificate verified for the Service's DNS name
`<name>.<namespace>.svc` as kube-apiserver verifies it. The object reviewed is the one the
request carries (patches applied), before the server's own defaults.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
import uuid
from dataclasses import dataclass
from typing import Any

import aiohttp

from akri.sim.apiserver import errors
from akri.sim.apiserver.apps_kinds import selector_labels
from akri.sim.apiserver.authn import User
from akri.sim.apiserver.endpoints import endpoint
from akri.sim.apiserver.resources import ResourceType
from akri.sim.apiserver.store import Store

JSON = dict[str, Any]
KEY = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
DEFAULT_TIMEOUT_S = 10


@dataclass(frozen=True)
class Write:
    """One write as a webhook sees it."""

    operation: str  # CREATE, UPDATE or DELETE
    resource: ResourceType
    subresource: str
    namespace: str
    name: str
    obj: JSON | None
    old: JSON | None
    user: User
    dry_run: bool = False


def matches_rule(rule: JSON, write: Write) -> bool:
    def has(key: str, value: str) -> bool:
        listed = rule.get(key) or []
        return "*" in listed or value in listed

    resource = write.resource
    combined = resource.plural + (f"/{write.subresource}" if write.subresource else "")
    resources = rule.get("resources") or []
    scope = rule.get("scope") or "*"
    return (
        has("operations", write.operation)
        and has("apiGroups", resource.group)
        and has("apiVersions", resource.version)
        and ("*" in resources or combined in resources
             or (bool(write.subresource) and f"*/{write.subresource}" in resources)
             or (not write.subresource and "*" in [r.split("/")[0] for r in resources]))
        and scope in ("*", "Namespaced" if resource.namespaced else "Cluster")
    )  # fmt: skip


def _selected(selector: JSON | None, labels: dict[str, str] | None) -> bool:
    return selector_labels(selector).matches(labels)


def applicable(webhook: JSON, write: Write, namespace_labels: dict[str, str] | None) -> bool:
    """Whether `webhook` reviews `write` (`namespace_labels`: None for cluster-scoped writes)."""
    if not any(matches_rule(rule, write) for rule in webhook.get("rules") or []):
        return False
    if namespace_labels is not None and not _selected(
        webhook.get("namespaceSelector"), namespace_labels
    ):
        return False
    subject = write.obj if write.obj is not None else write.old or {}
    return _selected(webhook.get("objectSelector"), (subject.get("metadata") or {}).get("labels"))


def review(write: Write) -> JSON:
    """The AdmissionReview v1 request body for `write`."""
    resource = write.resource
    kind = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    gvr = {"group": resource.group, "version": resource.version, "resource": resource.plural}
    request: JSON = {
        "uid": str(uuid.uuid4()),
        "kind": kind,
        "resource": gvr,
        "requestKind": kind,
        "requestResource": gvr,
        "name": write.name,
        "operation": write.operation,
        "userInfo": {
            "username": write.user.name,
            "groups": list(write.user.groups),
            **({"extra": write.user.extra_map} if write.user.extra else {}),
        },
        "object": write.obj,
        "oldObject": write.old,
        "dryRun": write.dry_run,
    }
    if write.subresource:
        request["subResource"] = write.subresource
    if write.namespace:
        request["namespace"] = write.namespace
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _url(webhook: JSON, store: Store) -> tuple[str, str | None]:
    """Where to send the review, and the name its certificate must carry when that is not the
    URL's host: a Service's DNS name, as kube-apiserver verifies it. LookupError when the
    Service or a ready pod behind it is missing."""
    config = webhook.get("clientConfig") or {}
    if config.get("url"):
        return str(config["url"]), None
    reference = config.get("service") or {}
    name, namespace = reference.get("name", ""), reference.get("namespace", "")
    service = store.peek(("", "services"), namespace, name)
    if service is None:
        raise LookupError(f'service "{name}" not found')
    pods = store.objects(("", "pods"), namespace)
    host, port = endpoint(service, pods, int(reference.get("port", 443)))
    return f"https://{host}:{port}{reference.get('path', '/')}", f"{name}.{namespace}.svc"


def _context(webhook: JSON) -> ssl.SSLContext:
    bundle = (webhook.get("clientConfig") or {}).get("caBundle")
    if not bundle:
        return ssl.create_default_context()
    return ssl.create_default_context(cadata=base64.b64decode(bundle).decode())


async def call(webhook: JSON, write: Write, store: Store) -> None:
    """Send the review; raise the request's refusal, or its failure under failurePolicy Fail."""
    name = webhook.get("name", "")
    body = review(write)
    timeout = aiohttp.ClientTimeout(total=webhook.get("timeoutSeconds") or DEFAULT_TIMEOUT_S)
    try:
        url, host = _url(webhook, store)
        async with (
            aiohttp.ClientSession(timeout=timeout) as session,
            session.post(url, json=body, ssl=_context(webhook), server_hostname=host) as answer,
        ):
            answer.raise_for_status()
            response = (await answer.json())["response"]
            allowed = bool(response["allowed"])
    except (
        aiohttp.ClientError,
        TimeoutError,
        ValueError,
        LookupError,
        TypeError,
        ssl.SSLError,
    ) as error:
        if webhook.get("failurePolicy", "Fail") == "Ignore":
            return
        raise errors.internal(
            f'failed calling webhook "{name}": {error or type(error).__name__}'
        ) from error
    if allowed:
        return
    status = response.get("status") or {}
    message = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message += f": {status['message']}"
    code = int(status.get("code") or 403)
    raise errors.ApiError(code, status.get("reason") or "Forbidden", message)


async def admit(store: Store, write: Write) -> None:
    """Call every applicable webhook (concurrently, as the API server does); first refusal wins."""
    configurations = store.objects(KEY)
    if not configurations:
        return
    namespace_labels: dict[str, str] | None = None
    if write.resource.namespaced:
        namespace = store.peek(("", "namespaces"), "", write.namespace) or {}
        namespace_labels = (namespace.get("metadata") or {}).get("labels") or {}
    hooks = [
        webhook
        for configuration in configurations
        for webhook in configuration.get("webhooks") or []
        if applicable(webhook, write, namespace_labels)
    ]
    if hooks:
        await asyncio.gather(*(call(hook, write, store) for hook in hooks))
