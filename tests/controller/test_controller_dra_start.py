"""A DRA-mode controller whose start-up sweep of leftover ResourceSlices meets API errors
retries it instead of exiting (seen in the soak: an injected 500 crashed the controller)."""

from __future__ import annotations

import dataclasses

from kubernetes_asyncio import client

from akri.dra.mode import Mode
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.controller.conftest import FAST, running
from tests.support import eventually


async def test_the_start_up_sweep_retries_api_errors(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    refusal = apiserver.faults.add(
        FaultRule(verb="list", resource="resourceslices", status=500, count=3)
    )
    async with running(api, dataclasses.replace(FAST, mode=Mode.DRA)) as controller:

        async def ready() -> bool:
            return controller.ready

        await eventually(ready, "the controller ready after the refusals")
        assert controller.dra is not None
    assert refusal.hits == 3
