"""Validating admission webhooks, called by the emulator over HTTPS with the configured CA.

Emulator-only: a real API server could not reach the test's webhook server.
"""

from __future__ import annotations

import base64
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.sim.apiserver.tls import Pki
from tests.conformance.support import status_body

pytestmark = pytest.mark.emulator_only


class Webhook:
    """An HTTPS webhook that denies objects labelled `deny`, and keeps every review."""

    def __init__(self) -> None:
        self.reviews: list[dict[str, Any]] = []

    async def validate(self, request: web.Request) -> web.Response:
        review = await request.json()
        self.reviews.append(review["request"])
        labels = ((review["request"].get("object") or {}).get("metadata") or {}).get("labels")
        denied = "deny" in (labels or {})
        response: dict[str, Any] = {"uid": review["request"]["uid"], "allowed": not denied}
        if denied:
            response["status"] = {"code": 403, "message": "labelled deny"}
        return web.json_response({**review, "response": response})


@pytest.fixture
async def webhook(tmp_path: Path) -> AsyncIterator[tuple[Webhook, str, str]]:
    pki = Pki(tmp_path / "pki")
    pki.create()
    hook = Webhook()
    app = web.Application()
    app.router.add_post("/validate", hook.validate)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=pki.server_context())
    await site.start()
    port = runner.addresses[0][1]
    bundle = base64.b64encode(pki.ca_file.read_bytes()).decode()
    yield hook, f"https://127.0.0.1:{port}/validate", bundle
    await runner.cleanup()


def configuration(name: str, url: str, bundle: str, policy: str = "Fail") -> Any:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": f"{name}.akri.sh",
            "clientConfig": {"url": url, "caBundle": bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                       "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "objectSelector": {"matchExpressions": [{"key": "checked", "operator": "Exists"}]},
            "failurePolicy": policy,
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "timeoutSeconds": 2,
        }],
    }  # fmt: skip


def config_map(name: str, **labels: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels))


async def test_webhooks_review_matching_writes_and_their_denials_refuse(
    api: client.ApiClient, namespace: str, webhook: tuple[Webhook, str, str]
) -> None:
    hook, url, bundle = webhook
    registration = client.AdmissionregistrationV1Api(api)
    await registration.create_validating_webhook_configuration(configuration("deny", url, bundle))
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_config_map(namespace, config_map("a", checked="1", deny="1"))
    assert refused.value.status == 403
    assert status_body(refused.value)["message"] == (
        'admission webhook "deny.akri.sh" denied the request: labelled deny'
    )
    await core.create_namespaced_config_map(namespace, config_map("b", checked="1"))
    await core.create_namespaced_config_map(namespace, config_map("unchecked"))
    assert [(r["operation"], r["name"], r["namespace"]) for r in hook.reviews] == [
        ("CREATE", "a", namespace), ("CREATE", "b", namespace)
    ]  # fmt: skip
    assert hook.reviews[0]["resource"] == {"group": "", "version": "v1", "resource": "configmaps"}


async def test_an_unreachable_webhook_fails_writes_only_under_policy_fail(
    api: client.ApiClient, namespace: str, webhook: tuple[Webhook, str, str]
) -> None:
    _, _, bundle = webhook
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"https://127.0.0.1:{probe.getsockname()[1]}/validate"
    registration = client.AdmissionregistrationV1Api(api)
    await registration.create_validating_webhook_configuration(
        configuration("lenient", dead, bundle, "Ignore")
    )
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(namespace, config_map("a", checked="1"))
    await registration.create_validating_webhook_configuration(
        configuration("strict", dead, bundle)
    )
    with pytest.raises(ApiException) as failed:
        await core.create_namespaced_config_map(namespace, config_map("b", checked="1"))
    assert failed.value.status == 500
    assert 'failed calling webhook "strict.akri.sh"' in status_body(failed.value)["message"]


async def test_a_dry_run_is_reviewed_as_one_and_its_denial_refuses(
    api: client.ApiClient, namespace: str, webhook: tuple[Webhook, str, str]
) -> None:
    hook, url, bundle = webhook
    registration = client.AdmissionregistrationV1Api(api)
    await registration.create_validating_webhook_configuration(configuration("dry", url, bundle))
    core = client.CoreV1Api(api)
    with pytest.raises(ApiException) as refused:
        await core.create_namespaced_config_map(
            namespace, config_map("a", checked="1", deny="1"), dry_run="All"
        )
    assert refused.value.status == 403
    await core.create_namespaced_config_map(namespace, config_map("b", checked="1"), dry_run="All")
    assert [(r["name"], r["dryRun"]) for r in hook.reviews] == [("a", True), ("b", True)]
    assert (await core.list_namespaced_config_map(namespace, label_selector="checked")).items == []
