"""The API emulator refuses each Configuration a CRD CEL rule refuses, with the rule's message,
as `kubectl apply` on a real API server would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.unit.test_api_crd import BAD_SPECS, CEL_MESSAGES, debug_echo

UNPROCESSABLE = 422
CEL_REFUSED = [p for p in BAD_SPECS if p.values[1] in CEL_MESSAGES]


@pytest.mark.parametrize(("mutate", "message"), CEL_REFUSED)
async def test_the_api_server_refuses_with_the_rules_message(
    api: client.ApiClient, mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = debug_echo()
    mutate(data["spec"])
    custom = client.CustomObjectsApi(api)
    with pytest.raises(ApiException) as refused:
        await custom.create_namespaced_custom_object(
            "akri.sh", "v0", "default", "configurations", data
        )
    assert refused.value.status == UNPROCESSABLE
    assert message in str(refused.value.body)


async def test_the_example_passes_every_rule(api: client.ApiClient) -> None:
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(
        "akri.sh", "v0", "default", "configurations", debug_echo()
    )
    assert created["metadata"]["name"] == "akri-debug-echo-foo"
