"""A write the API refuses is reported on the Configuration (ControllerWriteRefused and an
Event) and logged in one line, and the report goes when the write is taken again.

On a real cluster the controller's shared-pool ResourceSlice was refused with 422 and retried
forever, each time logged as a dump of HTTP headers, with nothing on the Configuration.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.dra.mode import Mode
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.controller.conftest import (
    FAST,
    NAMESPACE,
    configuration_body,
    create_configuration,
    create_instance,
    events,
    ready_node,
    running,
    shared_slices,
)
from tests.support import eventually

FORBIDDEN = (
    'resourceslices.resource.k8s.io is forbidden: User "system:serviceaccount:akri:'
    'akri-controller" cannot create resource "resourceslices" in API group "resource.k8s.io" '
    "at the cluster scope"
)


async def refused_condition(api: client.ApiClient, name: str) -> dict[str, Any] | None:
    found = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", name
    )
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "ControllerWriteRefused"), None)


async def test_a_refused_slice_write_is_reported_and_cleared_once_taken(
    apiserver: ApiServer, api: client.ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="akri.controller")
    await ready_node(api, "node-0")
    await ready_node(api, "node-1")
    refusal = apiserver.faults.add(
        FaultRule(verb="create", resource="resourceslices", status=403, message=FORBIDDEN)
    )
    configuration = await create_configuration(api, configuration_body("cam"))
    await create_instance(api, configuration, "dev0", ["node-0", "node-1"])

    async with running(api, dataclasses.replace(FAST, mode=Mode.DRA)):

        async def refused() -> dict[str, Any] | None:
            found = await refused_condition(api, "cam")
            return found if found is not None and found["status"] == "True" else None

        condition = await eventually(refused, "ControllerWriteRefused True")
        assert condition["reason"] == "Refused"
        assert FORBIDDEN in condition["message"]
        warnings = [e for e in await events(api, "cam") if e.reason == "WriteRefused"]
        assert warnings
        assert warnings[0].type == "Warning"
        assert FORBIDDEN in warnings[0].message
        assert not await shared_slices(api)

        apiserver.faults.remove(refusal.id)  # RBAC granted

        async def cleared() -> bool:
            found = await refused_condition(api, "cam")
            return found is not None and found["status"] == "False"

        await eventually(cleared, "ControllerWriteRefused cleared")
        assert await shared_slices(api)
        reasons = {e.reason for e in await events(api, "cam")}
        assert "WriteAccepted" in reasons

    failures = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert failures
    for line in failures:
        assert "\n" not in line
        assert FORBIDDEN in line
        assert "HTTP response headers" not in line
