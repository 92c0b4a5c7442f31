"""A DRA-mode controller whose start-up sweep of leftover ResourceSlices meets API errors
retries it instead of exiting (seen in the soak: an injected 500 crashed the controller)."""

from __future__ import annotations

import dataclasses

import pytest
from kubernetes_asyncio import client

from akri.controller.controller import Controller, resolved
from akri.controller.metrics import ControllerMetrics
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


async def test_a_controller_is_built_for_a_resolved_mode(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    """What it follows and publishes depends on the mode: `auto` is resolved before."""
    with pytest.raises(ValueError, match="resolved"):
        Controller(api, dataclasses.replace(FAST, mode=Mode.AUTO), metrics=ControllerMetrics())
    tuning = await resolved(api, dataclasses.replace(FAST, mode=Mode.AUTO))
    controller = Controller(api, tuning, metrics=ControllerMetrics())
    assert tuning.mode is Mode.DRA  # the emulated API server serves resource.k8s.io/v1
    assert controller.dra is not None
    assert controller.caches.claims is not None
