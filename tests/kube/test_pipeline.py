"""Pipelined creates through the adaptive window, against the API emulator over real HTTP."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.backoff import Backoff
from akri.kube.pipeline import Pipeline
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.window import AdaptiveWindow
from tests.support import eventually


def body(name: str) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Instance",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"configurationName": "cfg", "capacity": 1, "nodes": ["n"], "deviceUsage": {}},
    }


def quick() -> Backoff:
    """Retry-After (1 s from the emulator) is capped at the backoff's maximum."""
    return Backoff(initial=0.01, maximum=0.02)


class Creates:
    """Creates Instances, counting how many of its requests are in flight at once."""

    def __init__(self, api: client.ApiClient) -> None:
        self._custom = client.CustomObjectsApi(api)
        self.in_flight = 0
        self.peak = 0

    async def __call__(self, name: str) -> None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await self._custom.create_namespaced_custom_object(
                naming.GROUP, naming.VERSION, "default", "instances", body(name)
            )
        finally:
            self.in_flight -= 1

    async def stored(self) -> set[str]:
        listed = await self._custom.list_namespaced_custom_object(
            naming.GROUP, naming.VERSION, "default", "instances"
        )
        return {item["metadata"]["name"] for item in listed["items"]}


NAMES = [f"cfg-{i:06x}" for i in range(60)]


async def test_the_window_grows_to_its_maximum_and_never_past_it(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    apiserver.faults.add(verb="create", resource="instances", delay=0.02)
    pipeline = Pipeline(AdaptiveWindow(initial=2, maximum=10, floor=1.0))
    creates = Creates(api)
    await pipeline.each(NAMES, creates)
    assert await creates.stored() == set(NAMES)
    assert creates.peak == 10
    assert pipeline.window.in_flight == 0


async def test_429s_shrink_the_window_and_every_create_lands_once(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    throttled = apiserver.faults.add(verb="create", resource="instances", status=429, count=6)
    writes = apiserver.faults.add(FaultRule(verb="create", resource="instances"))
    pipeline = Pipeline(AdaptiveWindow(initial=8, maximum=16), backoff=quick)
    creates = Creates(api)
    await pipeline.each(NAMES, creates)
    assert throttled.hits == 6
    assert pipeline.window.decreases >= 1
    assert pipeline.window.limit < 16
    assert writes.hits == len(NAMES) + 6  # each refused create was sent once more
    assert await creates.stored() == set(NAMES)


async def test_a_failure_stops_new_creates_and_the_next_round_finishes(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    apiserver.faults.add(verb="create", resource="instances", delay=0.01)
    broken = FaultRule(verb="create", resource="instances", status=500, count=1)
    pipeline = Pipeline(AdaptiveWindow(initial=4, maximum=4))
    creates = Creates(api)

    async def create(name: str) -> None:
        if name == NAMES[20]:  # this one meets an internal error
            apiserver.faults.add(broken)
        await creates(name)

    with pytest.raises(ApiException) as raised:
        await pipeline.each(NAMES, create)
    assert raised.value.status == 500
    assert broken.hits == 1
    assert creates.in_flight == pipeline.window.in_flight == 0
    first = await creates.stored()
    # The create that met the error is one of those in flight; none after them was started.
    assert len(first) == len(set(NAMES[: 21 + 4]) & first) < 21 + 4
    await pipeline.each([n for n in NAMES if n not in first], creates)
    assert await creates.stored() == set(NAMES)


async def test_pushback_past_the_attempts_is_raised(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    apiserver.faults.add(verb="create", resource="instances", status=503)
    pipeline = Pipeline(attempts=3, backoff=quick)
    with pytest.raises(ApiException) as raised:
        await pipeline.submit(lambda: Creates(api)(NAMES[0]))
    assert raised.value.status == 503
    assert pipeline.window.in_flight == 0
    assert pipeline.window.decreases >= 1


async def test_a_cancelled_write_gives_its_place_back(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    apiserver.faults.pause()
    pipeline = Pipeline(AdaptiveWindow(initial=1, maximum=1))
    task = asyncio.create_task(pipeline.submit(lambda: Creates(api)(NAMES[0])))
    await eventually(lambda: apiserver.faults.held, "the create to reach the server")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    apiserver.faults.resume()
    assert pipeline.window.in_flight == 0
    assert pipeline.window.room
