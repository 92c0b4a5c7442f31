"""The list+watch reflector against the emulated API: resume, relist on 410, no missed deletes."""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.kube.reflector import EventType, Object, RawWatch, Reflector
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.support import eventually, running


def config_map(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"v": "1"})


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[EventType, str]] = []

    async def __call__(self, kind: EventType, obj: Object) -> None:
        self.events.append((kind, obj["metadata"]["name"]))


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture(params=[False, True], ids=["whole", "slim"])
async def followed(
    core: client.CoreV1Api, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Reflector, Recorder]]:
    recorder = Recorder()
    reflector = Reflector(
        functools.partial(core.list_namespaced_config_map, "default"),
        recorder,
        watch_timeout_s=1,  # short server-side timeouts exercise resuming on every test
        slim=request.param,
    )
    task = asyncio.create_task(reflector.run())
    await asyncio.wait_for(reflector.synced.wait(), 10)
    yield reflector, recorder
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_list_then_watch_delivers_every_change_in_order(
    core: client.CoreV1Api, followed: tuple[Reflector, Recorder]
) -> None:
    reflector, recorder = followed
    await core.create_namespaced_config_map("default", config_map("a"))
    patched = await core.patch_namespaced_config_map("a", "default", {"data": {"v": "2"}})
    await eventually(lambda: len(recorder.events) == 2, "two events")
    kept = reflector.objects[("default", "a")]
    assert kept["metadata"]["resourceVersion"] == patched.metadata.resource_version
    assert ("data" in kept) is not reflector.slim, "a slim reflector keeps no data"
    await core.delete_namespaced_config_map("a", "default")

    await eventually(lambda: len(recorder.events) >= 3, "three events")
    assert recorder.events == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert ("default", "a") not in reflector.objects


async def test_resumes_after_server_side_timeouts_and_dropped_connections(
    apiserver: ApiServer, core: client.CoreV1Api, followed: tuple[Reflector, Recorder]
) -> None:
    reflector, recorder = followed
    for i in range(5):
        apiserver.faults.drop_watches()
        await core.create_namespaced_config_map("default", config_map(f"cm-{i}"))

    await eventually(lambda: len(reflector.objects) == 5, "five config maps")
    assert sorted(name for kind, name in recorder.events if kind == "ADDED") == [
        f"cm-{i}" for i in range(5)
    ]


async def test_gone_history_relists_and_reports_deletions_missed_meanwhile(
    apiserver: ApiServer, core: client.CoreV1Api, followed: tuple[Reflector, Recorder]
) -> None:
    reflector, recorder = followed
    await core.create_namespaced_config_map("default", config_map("keep"))
    await core.create_namespaced_config_map("default", config_map("lose"))
    await eventually(lambda: len(reflector.objects) == 2, "both objects")

    apiserver.faults.add(verb="watch", resource="configmaps", status=410, count=1)
    apiserver.faults.pause()
    apiserver.faults.drop_watches()
    apiserver.faults.resume()
    await core.delete_namespaced_config_map("lose", "default")

    await eventually(lambda: ("DELETED", "lose") in recorder.events, "the missed delete")
    assert set(reflector.objects) == {("default", "keep")}


async def test_a_failing_handler_does_not_stop_the_watch(
    core: client.CoreV1Api,
) -> None:
    seen: list[str] = []

    async def fragile(kind: EventType, obj: Object) -> None:
        seen.append(obj["metadata"]["name"])
        if obj["metadata"]["name"] == "bad":
            raise RuntimeError("handler bug")

    reflector = Reflector(functools.partial(core.list_namespaced_config_map, "default"), fragile)
    task = asyncio.create_task(reflector.run())
    try:
        await core.create_namespaced_config_map("default", config_map("bad"))
        await core.create_namespaced_config_map("default", config_map("good"))
        await eventually(lambda: "good" in seen, "the event after the failing one")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_survives_api_errors_with_backoff(
    apiserver: ApiServer, core: client.CoreV1Api
) -> None:
    apiserver.faults.add(verb="list", resource="configmaps", status=500, count=2)
    reflector = Reflector(functools.partial(core.list_namespaced_config_map, "default"))
    reflector._backoff.initial = 0.01
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.synced.wait(), 10)
        assert reflector._backoff.attempts == 0  # reset after the successful list
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize("status", [409, 429, 500])
async def test_a_failed_relist_keeps_every_object_and_retries(
    apiserver: ApiServer, core: client.CoreV1Api, status: int
) -> None:
    """Found by the soak: an error answer to a relist was read as an empty list (every object
    reported deleted), then the reflector died on the Status body's missing resourceVersion."""
    await core.create_namespaced_config_map("default", config_map("keep"))
    recorder = Recorder()
    reflector = Reflector(functools.partial(core.list_namespaced_config_map, "default"), recorder)
    reflector._backoff.initial = 0.01
    task = asyncio.create_task(reflector.run())
    try:
        await asyncio.wait_for(reflector.synced.wait(), 10)
        failures = apiserver.faults.add(verb="list", resource="configmaps", status=status, count=2)
        apiserver.faults.add(verb="watch", resource="configmaps", status=410, count=1)
        apiserver.faults.drop_watches()
        await eventually(lambda: failures.exhausted, "both failed relists")
        await core.create_namespaced_config_map("default", config_map("after"))
        await eventually(lambda: ("ADDED", "after") in recorder.events, "the watch to resume")
        assert recorder.events == [("ADDED", "keep"), ("ADDED", "after")]
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_watch_event_is_parsed_once() -> None:
    line = '{"type": "MODIFIED", "object": {"metadata": {"name": "a", "resourceVersion": "7"}}}'
    async with RawWatch() as stream:
        event = stream.unmarshal_event(line, "object")
    assert event["object"] is event["raw_object"]  # not serialised and parsed again
    assert event["raw_object"]["metadata"]["resourceVersion"] == "7"


async def test_a_watch_builds_no_api_client_of_its_own(
    apiserver: ApiServer, core: client.CoreV1Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its events are read raw; an ApiClient of its own (kubernetes-asyncio's Watch builds one
    to parse events into types) would load an SSL context on every watch opened."""
    contexts = []
    make_context = ssl.create_default_context

    def counted(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        contexts.append(kwargs)
        return make_context(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counted)
    watches = apiserver.faults.add(FaultRule(verb="watch", resource="configmaps"))
    reflector = Reflector(functools.partial(core.list_namespaced_config_map, "default"))

    def opened_three_times() -> bool:
        apiserver.faults.drop_watches()
        return watches.hits >= 3

    async with running(reflector.run()):
        await eventually(opened_three_times, "the watch cut and opened again")
    assert contexts == []


async def test_an_assumed_object_no_relist_finds_is_reported_deleted_once_it_must_be_there(
    apiserver: ApiServer, core: client.CoreV1Api, followed: tuple[Reflector, Recorder]
) -> None:
    """A write answered while a relist's list is in flight may be newer than the list: that
    relist keeps it (the watch after it shows it). A later relist that still lacks it
    reports it deleted, so no program keeps an object another writer deleted unseen."""
    reflector, recorder = followed
    listing = apiserver.faults.add(verb="list", resource="configmaps", hold=True, count=1)
    apiserver.faults.add(verb="watch", resource="configmaps", status=410, count=1)
    apiserver.faults.drop_watches()
    await eventually(lambda: listing.hits == 1, "the relist's list, held")
    reflector.assume({"metadata": {"name": "late", "namespace": "default"}})
    await core.create_namespaced_config_map("default", config_map("marker"))
    apiserver.faults.remove(listing.id)
    await eventually(lambda: ("ADDED", "marker") in recorder.events, "the first relist")
    assert ("DELETED", "late") not in recorder.events

    apiserver.faults.add(verb="watch", resource="configmaps", status=410, count=1)
    apiserver.faults.drop_watches()
    await eventually(lambda: ("DELETED", "late") in recorder.events, "the second relist")
    assert recorder.events == [("ADDED", "marker"), ("DELETED", "late")]
