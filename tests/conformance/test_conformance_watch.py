"""Watch streams: event types, resume by resourceVersion, 410, selectors, timeouts, bookmarks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from akri.sim.apiserver import ApiServer
from tests.conformance.support import (
    DEADLINE_S,
    GROUP,
    MERGE_PATCH,
    PLURAL,
    VERSION,
    Cluster,
    new_client,
    raw_get,
    widget,
)

Event = dict[str, Any]


OURS = "made-by=conformance"
"""A selector for the ConfigMaps a test made: a real cluster publishes its own into every new
namespace (kube-root-ca.crt), at a moment no test controls."""


def config_map(name: str, **labels: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"made-by": "conformance", **labels})
    )


async def take(events: AsyncIterator[Event], count: int) -> list[Event]:
    """The next `count` events, or a failure at the deadline."""
    received: list[Event] = []
    async with asyncio.timeout(DEADLINE_S):
        async for event in events:
            received.append(event)
            if len(received) == count:
                break
    return received


def summary(events: list[Event]) -> list[tuple[str, str]]:
    return [(e["type"], e["raw_object"]["metadata"]["name"]) for e in events]


async def test_added_modified_deleted_in_order(core: client.CoreV1Api, namespace: str) -> None:
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_namespaced_config_map, namespace, resource_version=since, label_selector=OURS
        )
        await core.create_namespaced_config_map(namespace, config_map("cm"))
        await core.patch_namespaced_config_map("cm", namespace, {"data": {"k": "v"}})
        await core.delete_namespaced_config_map("cm", namespace)
        received = await take(events, 3)
    assert summary(received) == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]
    versions = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in received]
    assert versions == sorted(versions)
    assert len(set(versions)) == 3
    assert received[1]["object"].data == {"k": "v"}


async def test_watch_without_version_starts_with_existing_objects(
    core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("old", mark="x"))
    async with watch.Watch() as stream:
        events = stream.stream(core.list_namespaced_config_map, namespace, label_selector="mark")
        first = await take(events, 1)
        await core.create_namespaced_config_map(namespace, config_map("new", mark="y"))
        second = await take(events, 1)
    assert summary(first + second) == [("ADDED", "old"), ("ADDED", "new")]


async def test_resume_after_reconnect_misses_nothing(
    core: client.CoreV1Api, namespace: str
) -> None:
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_namespaced_config_map, namespace, resource_version=since, label_selector=OURS
        )
        await core.create_namespaced_config_map(namespace, config_map("first"))
        (seen,) = await take(events, 1)
    last = seen["raw_object"]["metadata"]["resourceVersion"]
    for index in range(5):  # changes while nobody watches
        await core.create_namespaced_config_map(namespace, config_map(f"while-away-{index}"))
    await core.patch_namespaced_config_map("first", namespace, {"data": {"k": "v"}})
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_namespaced_config_map, namespace, resource_version=last, label_selector=OURS
        )
        resumed = await take(events, 6)
    assert summary(resumed) == [("ADDED", f"while-away-{i}") for i in range(5)] + [
        ("MODIFIED", "first")
    ]


@pytest.mark.emulator_only
async def test_too_old_resource_version_is_410(tmp_path: Path) -> None:
    async with ApiServer(history_limit=3) as server:
        cluster = Cluster(server.write_kubeconfig(tmp_path / "kubeconfig"), server)
        async with await new_client(cluster) as api:
            core = client.CoreV1Api(api)
            since = (await core.list_namespaced_config_map("default")).metadata.resource_version
            for index in range(5):
                await core.create_namespaced_config_map("default", config_map(f"cm-{index}"))
            async with watch.Watch() as stream:
                events = stream.stream(
                    core.list_namespaced_config_map,
                    "default",
                    resource_version=since,
                    timeout_seconds=DEADLINE_S,
                )
                with pytest.raises(ApiException) as caught:
                    await take(events, 1)
            assert caught.value.status == 410
    await asyncio.get_running_loop().shutdown_default_executor()


async def test_label_selector_transitions_become_added_and_deleted(
    core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("cm"))
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_namespaced_config_map,
            namespace,
            label_selector="app=x",
            resource_version=since,
        )
        await core.patch_namespaced_config_map("cm", namespace, {"data": {"unseen": "1"}})
        await core.patch_namespaced_config_map(
            "cm", namespace, {"metadata": {"labels": {"app": "x"}}}
        )
        await core.patch_namespaced_config_map("cm", namespace, {"data": {"seen": "1"}})
        await core.patch_namespaced_config_map(
            "cm", namespace, {"metadata": {"labels": {"app": None}}}
        )
        received = await take(events, 3)
    assert summary(received) == [("ADDED", "cm"), ("MODIFIED", "cm"), ("DELETED", "cm")]
    left = received[2]["raw_object"]["metadata"]
    assert left["labels"]["app"] == "x"  # the last state that matched
    assert int(left["resourceVersion"]) > int(
        received[1]["raw_object"]["metadata"]["resourceVersion"]
    )


async def test_field_selector_on_pods(core: client.CoreV1Api, namespace: str) -> None:
    since = (await core.list_namespaced_pod(namespace)).metadata.resource_version
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_pod_for_all_namespaces,
            # the namespace term keeps out other tests' pods on node-a (a real cluster's
            # namespace controller is still deleting them)
            field_selector=f"spec.nodeName=node-a,metadata.namespace={namespace}",
            resource_version=since,
        )
        for name, node in [("elsewhere", "node-b"), ("here", "node-a")]:
            body = client.V1Pod(
                metadata=client.V1ObjectMeta(name=name),
                spec=client.V1PodSpec(
                    node_name=node, containers=[client.V1Container(name="c", image="i")]
                ),
            )
            await core.create_namespaced_pod(namespace, body)
        received = await take(events, 1)
    assert summary(received) == [("ADDED", "here")]


async def test_custom_objects_across_namespaces(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    listed = await custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    since = listed["metadata"]["resourceVersion"]
    async with watch.Watch() as stream:
        events = stream.stream(
            custom.list_cluster_custom_object, GROUP, VERSION, PLURAL, resource_version=since
        )
        await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
        (event,) = await take(events, 1)
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "Widget"
    assert event["object"]["spec"]["capacity"] == 1  # defaulted by the schema


async def test_timeout_seconds_ends_the_stream(core: client.CoreV1Api, namespace: str) -> None:
    """Ends with nothing to report (of ours: see OURS)."""
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    received = []
    async with watch.Watch() as stream, asyncio.timeout(DEADLINE_S):
        async for event in stream.stream(
            core.list_namespaced_config_map,
            namespace,
            resource_version=since,
            timeout_seconds=1,
            label_selector=OURS,
        ):
            received.append(event)
    assert received == []


@pytest.mark.emulator_only
async def test_bookmarks_carry_a_resumable_version(core: client.CoreV1Api, namespace: str) -> None:
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version
    async with watch.Watch() as stream:
        events = stream.stream(
            core.list_namespaced_config_map,
            namespace,
            resource_version=since,
            allow_watch_bookmarks=True,
        )
        (bookmark,) = await take(events, 1)
    assert bookmark["type"] == "BOOKMARK"
    assert int(bookmark["raw_object"]["metadata"]["resourceVersion"]) >= int(since)


@pytest.mark.emulator_only
async def test_bookmarks_keep_coming_while_the_watch_lasts(
    core: client.CoreV1Api, namespace: str
) -> None:
    """Bookmarks every interval (0.2 s here), before a change and after it, and a watch that
    asked for them still ends at its timeoutSeconds."""
    since = (await core.list_namespaced_config_map(namespace)).metadata.resource_version

    async def types(timeout_s: int, stop: Callable[[list[str]], bool]) -> list[str]:
        """Event types of a watch with bookmarks from `since`, until `stop` or its end."""
        received: list[str] = []
        async with watch.Watch() as stream, asyncio.timeout(DEADLINE_S):
            async for event in stream.stream(
                core.list_namespaced_config_map,
                namespace,
                resource_version=since,
                allow_watch_bookmarks=True,
                timeout_seconds=timeout_s,
            ):
                received.append(event["type"])
                if received == ["BOOKMARK", "BOOKMARK"]:
                    await core.create_namespaced_config_map(namespace, config_map("cm"))
                if stop(received):
                    break
        return received

    received = await types(3600, lambda seen: "ADDED" in seen and seen[-1] == "BOOKMARK")
    assert received[:2] == ["BOOKMARK", "BOOKMARK"]
    assert received.count("ADDED") == 1
    ended = await types(1, lambda seen: False)  # from `since` again: ADDED, then its end
    assert "ADDED" in ended


@pytest.mark.parametrize("flag", ["true", "True", "1"])
async def test_watch_flag_spellings(api: client.ApiClient, flag: str) -> None:
    async with asyncio.timeout(DEADLINE_S):
        response = await raw_get(api, "/api/v1/namespaces", {"watch": flag})
        line = await response.content.readline()
        response.release()
    assert response.status == 200
    event = json.loads(line)  # a watch event, not a NamespaceList
    assert event["type"] == "ADDED"
    assert event["object"]["kind"] == "Namespace"


async def test_watch_stream_is_newline_delimited_json(
    core: client.CoreV1Api, api: client.ApiClient, namespace: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("cm"))
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    async with asyncio.timeout(DEADLINE_S):
        response = await raw_get(api, path, {"watch": "true", "timeoutSeconds": "1"})
        line = await response.content.readline()
        response.release()
    event = json.loads(line)
    assert event["type"] == "ADDED"
    assert event["object"]["metadata"]["name"] == "cm"


@pytest.mark.emulator_only
async def test_send_initial_events_ends_with_a_marked_bookmark(
    api: client.ApiClient, namespace: str
) -> None:
    query = {
        "watch": "true",
        "sendInitialEvents": "true",
        "allowWatchBookmarks": "true",
        "resourceVersionMatch": "NotOlderThan",
        "fieldSelector": f"metadata.name={namespace}",
    }
    async with asyncio.timeout(DEADLINE_S):
        response = await raw_get(api, "/api/v1/namespaces", query)
        lines = [await response.content.readline() for _ in range(2)]
        response.release()
    added, bookmark = (json.loads(line) for line in lines)
    assert (added["type"], added["object"]["metadata"]["name"]) == ("ADDED", namespace)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


async def test_watchers_of_one_change_see_it_in_their_own_version_and_selection(
    api: client.ApiClient, gizmos: client.CustomObjectsApi, namespace: str
) -> None:
    """One change reaches each watcher as its request asks: in the version it watches, and
    as DELETED for the watcher whose selector it leaves, whichever watcher reads first."""
    body = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Gizmo",
        "metadata": {"name": "g", "labels": {"app": "x"}},
        "spec": {"size": 1},
    }
    created = await gizmos.create_namespaced_custom_object(GROUP, "v1", namespace, "gizmos", body)
    since = created["metadata"]["resourceVersion"]
    watches = {
        "v1": ("v1", {}),
        "v2": ("v2", {}),
        "v1 app=x": ("v1", {"labelSelector": "app=x"}),
        "v2 app=x": ("v2", {"labelSelector": "app=x"}),
    }
    responses = {
        name: await raw_get(
            api,
            f"/apis/{GROUP}/{version}/namespaces/{namespace}/gizmos",
            {"watch": "true", "resourceVersion": since, **query},
        )
        for name, (version, query) in watches.items()
    }
    change = {"metadata": {"labels": {"app": None}}, "spec": {"size": 2}}
    await gizmos.patch_namespaced_custom_object(
        GROUP, "v1", namespace, "gizmos", "g", change, **MERGE_PATCH
    )
    received = {}
    async with asyncio.timeout(DEADLINE_S):
        for name, response in responses.items():
            received[name] = json.loads(await response.content.readline())
            response.release()
    seen = {n: (e["type"], e["object"]["apiVersion"]) for n, e in received.items()}
    assert seen == {
        "v1": ("MODIFIED", f"{GROUP}/v1"),
        "v2": ("MODIFIED", f"{GROUP}/v2"),
        "v1 app=x": ("DELETED", f"{GROUP}/v1"),
        "v2 app=x": ("DELETED", f"{GROUP}/v2"),
    }
    sizes = {n: e["object"]["spec"]["size"] for n, e in received.items()}
    # A watcher the object left sees its last matching state.
    assert sizes == {"v1": 2, "v2": 2, "v1 app=x": 1, "v2 app=x": 1}
