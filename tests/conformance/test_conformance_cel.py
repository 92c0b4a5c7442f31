"""CRD validation rules (CEL): refused on create and update in the API server's own words."""

from __future__ import annotations

import copy

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import GROUP, gadget, status_body


async def refusal(call: object) -> str:
    with pytest.raises(ApiException) as refused:
        await call  # type: ignore[misc]
    assert refused.value.status == 422
    return str(status_body(refused.value)["message"])


async def test_validation_rules_refuse_creates_and_transitions(
    gadgets: client.CustomObjectsApi, namespace: str
) -> None:
    create = gadgets.create_namespaced_custom_object
    stored = await create(GROUP, "v1", namespace, "gadgets", gadget("g", ports=[1]))
    assert await refusal(create(GROUP, "v1", namespace, "gadgets", gadget("h", min=3))) == (
        'Gadget.conformance.akri.sh "h" is invalid: spec: Invalid value: min must not exceed max'
    )
    assert await refusal(create(GROUP, "v1", namespace, "gadgets", gadget("h", ports=[0]))) == (
        'Gadget.conformance.akri.sh "h" is invalid: spec.ports[0]: Invalid value: 0: '
        "ports are positive"
    )
    changed = copy.deepcopy(stored)
    changed["spec"]["mode"] = "b"
    replace = gadgets.replace_namespaced_custom_object
    assert await refusal(replace(GROUP, "v1", namespace, "gadgets", "g", changed)) == (
        'Gadget.conformance.akri.sh "g" is invalid: spec.mode: Invalid value: "b": '
        "mode is immutable"
    )
