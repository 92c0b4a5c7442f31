"""Fault injection (emulator only): forced codes, latency, pause, dropped watches, admin API."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import DEADLINE_S, Cluster, status_body
from tests.support import eventually

pytestmark = pytest.mark.emulator_only


def config_map(name: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name))


async def test_forced_conflict_fires_count_times(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("cm"))
    rule = cluster.emulator.faults.add(verb="patch", resource="configmaps", status=409, count=1)
    with pytest.raises(ApiException) as caught:
        await core.patch_namespaced_config_map("cm", namespace, {"data": {"k": "v"}})
    assert caught.value.status == 409
    patched = await core.patch_namespaced_config_map("cm", namespace, {"data": {"k": "v"}})
    assert patched.data == {"k": "v"}
    assert rule.hits == 1


@pytest.mark.parametrize(("code", "reason"), [(429, "TooManyRequests"), (500, "InternalError")])
async def test_forced_errors_match_by_name(
    cluster: Cluster, core: client.CoreV1Api, namespace: str, code: int, reason: str
) -> None:
    for name in ("hit", "miss"):
        await core.create_namespaced_config_map(namespace, config_map(name))
    cluster.emulator.faults.add(verb="get", resource="ConfigMap", name="hit", status=code)
    with pytest.raises(ApiException) as caught:
        await core.read_namespaced_config_map("hit", namespace)
    assert caught.value.status == code
    assert status_body(caught.value)["reason"] == reason
    if code == 429:
        assert caught.value.headers is not None
        assert caught.value.headers["Retry-After"]
    assert (await core.read_namespaced_config_map("miss", namespace)).metadata.name == "miss"


async def test_zero_probability_never_fires(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    rule = cluster.emulator.faults.add(verb="list", status=500, probability=0.0)
    await core.list_namespaced_config_map(namespace)
    assert rule.hits == 0


async def test_latency_delays_only_matching_requests(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("slow"))
    cluster.emulator.faults.add(verb="get", name="slow", delay=0.5)
    slow = asyncio.ensure_future(core.read_namespaced_config_map("slow", namespace))
    fast = asyncio.ensure_future(core.list_namespaced_config_map(namespace))
    done, _ = await asyncio.wait({slow, fast}, return_when=asyncio.FIRST_COMPLETED)
    assert done == {fast}
    assert (await slow).metadata.name == "slow"


async def test_pause_holds_requests_until_resume(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    faults = cluster.emulator.faults
    faults.pause()
    pending = asyncio.ensure_future(core.list_namespaced_config_map(namespace))

    async def held() -> bool:
        return faults.held == 1

    await eventually(held, "the request to be held")
    assert not pending.done()
    faults.resume()
    assert (await pending).metadata.resource_version


async def test_a_holding_rule_keeps_its_requests_until_removed(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("held"))
    faults = cluster.emulator.faults
    rule = faults.add(verb="get", name="held", hold=True, count=1)
    pending = asyncio.ensure_future(core.read_namespaced_config_map("held", namespace))
    await eventually(lambda: rule.hits, "the request to be held")

    assert (await core.read_namespaced_config_map("held", namespace)).metadata.name == "held"
    assert not pending.done()
    assert faults.remove(rule.id)
    assert (await pending).metadata.name == "held"


async def test_injected_410_on_watch_arrives_as_error_event(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    cluster.emulator.faults.add(verb="watch", resource="configmaps", status=410, count=1)
    async with watch.Watch() as stream:
        events = stream.stream(core.list_namespaced_config_map, namespace, timeout_seconds=5)
        with pytest.raises(ApiException) as caught:
            async with asyncio.timeout(DEADLINE_S):
                await anext(aiter(events))
    assert caught.value.status == 410


async def test_dropped_watch_is_resumed_by_the_client_without_loss(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    faults = cluster.emulator.faults
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    async with watch.Watch() as stream, asyncio.timeout(DEADLINE_S):
        events = aiter(
            stream.stream(core.list_namespaced_config_map, namespace, resource_version=since)
        )
        await core.create_namespaced_config_map(namespace, config_map("before"))
        first = await anext(events)
        assert faults.drop_watches(resource="configmaps") == 1
        await core.create_namespaced_config_map(namespace, config_map("after"))
        try:
            second = await anext(events)
        except aiohttp.ClientPayloadError:  # the cut surfaced: resume as a reflector would
            last = first["raw_object"]["metadata"]["resourceVersion"]
            events = aiter(
                stream.stream(core.list_namespaced_config_map, namespace, resource_version=last)
            )
            second = await anext(events)
    assert [e["raw_object"]["metadata"]["name"] for e in (first, second)] == ["before", "after"]


async def test_admin_http_api(cluster: Cluster, core: client.CoreV1Api, namespace: str) -> None:
    base = f"{cluster.emulator.url}/_sim/faults"
    async with aiohttp.ClientSession() as session:
        async with session.post(base, json={"verb": "list", "status": 503, "count": 1}) as reply:
            assert reply.status == 201
            rule = await reply.json()
        with pytest.raises(ApiException) as caught:
            await core.list_namespaced_config_map(namespace)
        assert caught.value.status == 503
        async with session.get(base) as reply:
            described = await reply.json()
        assert described["rules"][0]["hits"] == 1
        async with session.delete(f"{base}/{rule['id']}") as reply:
            assert reply.status == 200
        async with session.post(base, json={"colour": "red"}) as reply:
            assert reply.status == 400
        async with session.post(f"{base}/pause") as reply:
            assert (await reply.json())["paused"] is True
        async with session.post(f"{base}/resume") as reply:
            assert (await reply.json())["paused"] is False
        async with session.post(f"{base}/drop-watches", json={}) as reply:
            assert (await reply.json()) == {"dropped": 0}
