"""Events: one that cannot be recorded is one log line with the API's reason, not a dump."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client

from akri.kube.events import record_event


async def test_an_event_the_api_refuses_is_one_line_with_its_message(
    api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27: a refused write was logged as the client's exception text: status, reason,
    every HTTP response header and the body, over several lines."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "gone"}}

    await record_event(client.CoreV1Api(api), pod, "Tried", "hello", component="test")

    (record,) = [r for r in caplog.records if r.name == "akri.kube.events"]
    text = record.getMessage()
    assert "\n" not in text
    assert text.startswith("could not record event Tried on p: API error 404: ")
    assert 'namespaces "gone" not found' in text
