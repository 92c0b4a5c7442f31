"""The cache: indexes follow the watch; the controller's own writes show before the watch does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from kubernetes_asyncio import client

from akri.controller.cache import Cache
from akri.kube.reflector import EventType, Object
from akri.sim.apiserver import ApiServer
from tests.controller.conftest import NAMESPACE
from tests.support import eventually

APP = "app"


def by_app(obj: Object) -> list[tuple[str, str]]:
    app = (obj["metadata"].get("labels") or {}).get(APP)
    return [] if app is None else [(obj["metadata"]["namespace"], app)]


def config_map(name: str, app: str) -> client.V1ConfigMap:
    labels = {APP: app}
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels), data={})


@contextlib.asynccontextmanager
async def following(api: client.ApiClient, seen: list[str]) -> AsyncIterator[Cache]:
    async def changed(kind: EventType, obj: Object) -> None:
        seen.append(f"{kind} {obj['metadata']['name']}")

    core = client.CoreV1Api(api)
    cache = Cache(core.list_config_map_for_all_namespaces, changed, {APP: by_app})
    task = asyncio.create_task(cache.run())
    await cache.wait_synced()
    try:
        yield cache
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def names(objects: list[Object]) -> set[str]:
    return {o["metadata"]["name"] for o in objects}


async def test_index_follows_changes(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    seen: list[str] = []
    async with following(api, seen) as cache:
        await core.create_namespaced_config_map(NAMESPACE, config_map("a", "one"))
        await eventually(lambda: names(cache.by(APP, (NAMESPACE, "one"))) == {"a"}, "a indexed")
        await core.patch_namespaced_config_map(
            "a", NAMESPACE, {"metadata": {"labels": {APP: "two"}}}
        )
        await eventually(lambda: names(cache.by(APP, (NAMESPACE, "two"))) == {"a"}, "a moved")
        assert cache.by(APP, (NAMESPACE, "one")) == []
        await core.delete_namespaced_config_map("a", NAMESPACE)
        await eventually(lambda: cache.get(NAMESPACE, "a") is None, "a gone")
        assert cache.by(APP, (NAMESPACE, "two")) == []
        assert seen == ["ADDED a", "MODIFIED a", "DELETED a"]


async def test_assumptions_show_own_writes_until_the_watch_reports_them(
    api: client.ApiClient,
) -> None:
    core = client.CoreV1Api(api)
    seen: list[str] = []
    async with following(api, seen) as cache:
        await core.create_namespaced_config_map(NAMESPACE, config_map("old", "one"))
        old = await eventually(lambda: cache.get(NAMESPACE, "old"), "old cached")

        cache.assume_deleted(old)
        assert cache.get(NAMESPACE, "old") is None
        assert cache.by(APP, (NAMESPACE, "one")) == []

        created = {  # as a create would have returned it
            "metadata": {"name": "new", "namespace": NAMESPACE, "uid": "u", "labels": {APP: "one"}}
        }
        cache.assume(created)
        assert cache.get(NAMESPACE, "new") == created
        assert names(cache.by(APP, (NAMESPACE, "one"))) == {"new"}
        assert cache.by(APP, (NAMESPACE, "other")) == []

        # Any watch event about an object replaces what was assumed about it.
        await core.patch_namespaced_config_map("old", NAMESPACE, {"data": {"k": "v"}})
        await eventually(lambda: cache.get(NAMESPACE, "old") is not None, "old shown again")

        # An object the watch has already shown is not assumed again (it could be older).
        cache.assume(old)
        assert cache.get(NAMESPACE, "old") != old


async def test_an_assumed_object_deleted_while_the_watch_was_broken_is_forgotten_on_relist(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    """A relist after 410 Gone reports the deletion of an object the controller created and
    assumed, which another writer deleted before the watch showed it: the assumption would
    otherwise stand for an object that no longer exists (a broker pod never created again)."""
    core = client.CoreV1Api(api)
    seen: list[str] = []
    async with following(api, seen) as cache:
        reconnect = apiserver.faults.add(
            verb="watch", resource="configmaps", status=410, hold=True, count=1
        )
        apiserver.faults.drop_watches(resource="configmaps")
        await eventually(lambda: reconnect.hits == 1, "the watch to reconnect, held")
        created = await core.create_namespaced_config_map(NAMESPACE, config_map("mine", "one"))
        cache.assume(api.sanitize_for_serialization(created))
        await core.delete_namespaced_config_map("mine", NAMESPACE)  # another writer
        await core.create_namespaced_config_map(NAMESPACE, config_map("marker", "two"))

        apiserver.faults.remove(reconnect.id)  # the held watch answers 410 Gone: relist
        await eventually(lambda: cache.get(NAMESPACE, "marker") is not None, "the relist")
        assert cache.get(NAMESPACE, "mine") is None
        assert cache.by(APP, (NAMESPACE, "one")) == []
        assert seen == ["DELETED mine", "ADDED marker"]
