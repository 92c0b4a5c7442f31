"""`akri apply` (the chart's examples hook): Configurations written once the webhook can be
called, created or updated, and a real refusal reported at once."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.apply import apply
from tests.support import eventually

GROUP, VERSION, PLURAL = "akri.sh", "v0", "configurations"


def example(capacity: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Configuration",
        "metadata": {"name": "akri-debug-echo-foo", "namespace": "default"},
        "spec": {
            "discoveryHandler": {"name": "debugEcho", "discoveryDetails": "descriptions: [a]"},
            "capacity": capacity,
        },
    }


def webhook_without_pods() -> Any:
    """A registration whose Service has no ready pod: every Configuration write fails (500),
    as while the controller does not serve yet under failurePolicy Fail."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "akri-configurations"},
        "webhooks": [{
            "name": "configurations.validation.akri.sh",
            "admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Fail",
            "clientConfig": {"service": {"name": "akri-webhook", "namespace": "default"}},
            "rules": [{"apiGroups": [GROUP], "apiVersions": [VERSION],
                       "operations": ["CREATE", "UPDATE"], "resources": [PLURAL]}],
        }],
    }  # fmt: skip


def retries(caplog: pytest.LogCaptureFixture) -> int:
    return sum("not admitted yet, trying again" in r.getMessage() for r in caplog.records)


async def test_apply_waits_for_the_webhook_then_creates_and_later_updates(
    api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "akri.controller.apply")
    admission = client.AdmissionregistrationV1Api(api)
    await admission.create_validating_webhook_configuration(webhook_without_pods())
    applying = asyncio.create_task(apply(api, [example()], timeout_s=60, pause_s=0.05))
    await eventually(lambda: retries(caplog) >= 2, "apply to try again")
    assert not applying.done()
    await admission.delete_validating_webhook_configuration("akri-configurations")  # serving
    assert await applying == ["default/akri-debug-echo-foo"]
    assert await apply(api, [example(capacity=5)], timeout_s=5) == ["default/akri-debug-echo-foo"]
    stored = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, "default", PLURAL, "akri-debug-echo-foo"
    )
    assert stored["spec"]["capacity"] == 5


async def test_a_refusal_stops_apply_at_once(
    api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "akri.controller.apply")
    bad = example()
    bad["spec"]["capacity"] = 0  # the CRD's minimum is 1
    with pytest.raises(ApiException) as refused:
        await apply(api, [bad], timeout_s=60, pause_s=0.05)
    assert refused.value.status == 422
    assert retries(caplog) == 0


async def test_the_webhook_that_never_serves_fails_apply_at_the_deadline(
    api: client.ApiClient,
) -> None:
    await client.AdmissionregistrationV1Api(api).create_validating_webhook_configuration(
        webhook_without_pods()
    )
    with pytest.raises(ApiException) as failed:
        await apply(api, [example()], timeout_s=0.2, pause_s=0.05)
    assert failed.value.status == 500
