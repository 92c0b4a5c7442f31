"""`dryRun=All` on every write: defaults, validation and admission run, nothing is kept.

Every write here also leaves no watch event: each test watches its objects from before the dry
runs and expects the first event to be a real write made after them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import (
    COLLECTION_DEADLINE_S,
    DEADLINE_S,
    GROUP,
    MERGE_PATCH,
    NO_SCHEDULER,
    PLURAL,
    STRATEGIC_PATCH,
    VERSION,
    gadget,
    gone,
    status_body,
    widget,
)
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

DRY = "All"
LABEL = "dry-run-case"
JSON_PATCH: dict[str, Any] = {"_content_type": "application/json-patch+json"}
APPLY: dict[str, Any] = {"_content_type": "application/apply-patch+yaml"}


def config_map(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={LABEL: "1"}), data=data
    )


@pytest.fixture
async def unwatched(
    core: client.CoreV1Api, namespace: str
) -> AsyncIterator[asyncio.Queue[tuple[str, str]]]:
    """(type, name) of each ConfigMap event labelled LABEL in the namespace, from now on."""
    listed = await core.list_namespaced_config_map(namespace, label_selector=LABEL)
    events: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    async def follow() -> None:
        async with watch.Watch() as stream:
            async for event in stream.stream(
                core.list_namespaced_config_map,
                namespace,
                label_selector=LABEL,
                resource_version=listed.metadata.resource_version,
                timeout_seconds=int(DEADLINE_S),
            ):
                events.put_nowait((event["type"], event["object"].metadata.name))

    task = asyncio.create_task(follow())
    yield events
    task.cancel()


async def first_event_is(events: asyncio.Queue[tuple[str, str]], expected: tuple[str, str]) -> None:
    async with asyncio.timeout(DEADLINE_S):
        assert await events.get() == expected


async def test_dry_run_writes_of_every_verb_keep_nothing_and_answer_what_would_be_stored(
    core: client.CoreV1Api, namespace: str, unwatched: asyncio.Queue[tuple[str, str]]
) -> None:
    kept = await core.create_namespaced_config_map(namespace, config_map("kept", a="1"))
    await first_event_is(unwatched, ("ADDED", "kept"))
    version = kept.metadata.resource_version

    created = await core.create_namespaced_config_map(
        namespace, config_map("new", a="1"), dry_run=DRY
    )
    assert created.metadata.uid
    assert created.metadata.creation_timestamp
    assert created.metadata.resource_version is None
    assert created.data == {"a": "1"}
    generated = config_map("")
    generated.metadata.name, generated.metadata.generate_name = None, "gen-"
    named = await core.create_namespaced_config_map(namespace, generated, dry_run=DRY)
    assert named.metadata.name.startswith("gen-")

    kept.data = {"a": "2"}
    replaced = await core.replace_namespaced_config_map("kept", namespace, kept, dry_run=DRY)
    assert replaced.data == {"a": "2"}
    assert replaced.metadata.resource_version == version
    merged = await core.patch_namespaced_config_map(
        "kept", namespace, {"data": {"b": "1"}}, dry_run=DRY, **MERGE_PATCH
    )
    assert merged.data == {"a": "1", "b": "1"}
    strategic = await core.patch_namespaced_config_map(
        "kept", namespace, {"data": {"c": "1"}}, dry_run=DRY, **STRATEGIC_PATCH
    )
    assert strategic.data == {"a": "1", "c": "1"}
    patched = await core.patch_namespaced_config_map(
        "kept", namespace, [{"op": "add", "path": "/data/d", "value": "1"}], dry_run=DRY,
        **JSON_PATCH,
    )  # fmt: skip
    assert patched.data == {"a": "1", "d": "1"}
    applied = await core.patch_namespaced_config_map(
        "kept", namespace,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}, "data": {"e": "1"}},
        dry_run=DRY, field_manager="conformance", force=True, **APPLY,
    )  # fmt: skip
    assert applied.data["e"] == "1"
    await core.delete_namespaced_config_map("kept", namespace, dry_run=DRY)
    await core.delete_collection_namespaced_config_map(namespace, label_selector=LABEL, dry_run=DRY)

    after = await core.read_namespaced_config_map("kept", namespace)
    assert after.data == {"a": "1"}
    assert after.metadata.resource_version == version
    assert await gone(lambda: core.read_namespaced_config_map("new", namespace))
    await core.create_namespaced_config_map(namespace, config_map("sentinel"))
    await first_event_is(unwatched, ("ADDED", "sentinel"))


async def test_dry_run_still_defaults_validates_and_checks_rules(
    custom: client.CustomObjectsApi,
    widgets: None,
    gadgets: client.CustomObjectsApi,
    namespace: str,
) -> None:
    answer = await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w"), dry_run=DRY
    )
    assert answer["spec"]["capacity"] == 1  # the schema's default
    with pytest.raises(ApiException) as invalid:
        await custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, widget("w", color="green"), dry_run=DRY
        )
    assert invalid.value.status == 422
    with pytest.raises(ApiException) as ruled:
        await gadgets.create_namespaced_custom_object(
            GROUP, "v1", namespace, "gadgets", gadget("g", min=3, max=2), dry_run=DRY
        )
    assert ruled.value.status == 422
    assert "min must not exceed max" in status_body(ruled.value)["message"]
    listed = await custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert listed["items"] == []
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(ApiException) as exists:
        await custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, widget("w"), dry_run=DRY
        )
    assert exists.value.status == 409


async def test_dry_run_of_status_scale_and_binding_subresources_keeps_nothing(
    api: client.ApiClient,
    custom: client.CustomObjectsApi,
    core: client.CoreV1Api,
    widgets: None,
    namespace: str,
) -> None:
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    status = await custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "w", {"status": {"ready": True}}, dry_run=DRY,
        **MERGE_PATCH,
    )  # fmt: skip
    assert status["status"] == {"ready": True}
    stored = await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    assert "status" not in stored

    apps = client.AppsV1Api(api)
    labels = {"app": "dry"}
    deployment = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="d"),
        spec=client.V1DeploymentSpec(
            replicas=0,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    scheduler_name=NO_SCHEDULER,
                    containers=[client.V1Container(name="c", image="busybox")],
                ),
            ),
        ),
    )
    await apps.create_namespaced_deployment(namespace, deployment)
    scaled = await apps.patch_namespaced_deployment_scale(
        "d", namespace, {"spec": {"replicas": 3}}, dry_run=DRY, **MERGE_PATCH
    )
    assert scaled.spec.replicas == 3
    assert (await apps.read_namespaced_deployment("d", namespace)).spec.replicas == 0

    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(
            scheduler_name=NO_SCHEDULER, containers=[client.V1Container(name="c", image="busybox")]
        ),
    )
    await core.create_namespaced_pod(namespace, pod)
    node = (await core.list_node()).items
    target = node[0].metadata.name if node else "node-a"
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(kind="Node", name=target),
    )
    answer: Any = await core.create_namespaced_pod_binding(
        "p", namespace, binding, dry_run=DRY, _preload_content=False
    )  # unparsed: the answer is a Status, not the Binding the client expects
    assert answer.status == 201
    answer.release()
    assert (await core.read_namespaced_pod("p", namespace)).spec.node_name is None


async def test_dry_run_deletion_of_an_owner_collects_no_dependent(
    core: client.CoreV1Api, namespace: str
) -> None:
    async def owned(name: str) -> client.V1ConfigMap:
        owner = await core.create_namespaced_config_map(namespace, config_map(f"{name}-owner"))
        dependent = config_map(f"{name}-dependent")
        dependent.metadata.owner_references = [
            client.V1OwnerReference(
                api_version="v1", kind="ConfigMap", name=owner.metadata.name, uid=owner.metadata.uid
            )
        ]
        return await core.create_namespaced_config_map(namespace, dependent)

    await owned("dry")
    await owned("real")
    answer: Any = await core.delete_namespaced_config_map(
        "dry-owner", namespace, dry_run=DRY, propagation_policy="Foreground",
        _preload_content=False,
    )  # fmt: skip
    would_be = json.loads(await answer.read())  # the object, not the Status the client expects
    assert would_be["metadata"]["deletionTimestamp"]
    assert "foregroundDeletion" in would_be["metadata"]["finalizers"]
    await core.delete_namespaced_config_map("real-owner", namespace)
    await eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("real-dependent", namespace)),
        "the collector to delete the real owner's dependent",
        COLLECTION_DEADLINE_S,
    )
    owner = await core.read_namespaced_config_map("dry-owner", namespace)
    assert owner.metadata.deletion_timestamp is None
    assert not owner.metadata.finalizers
    await core.read_namespaced_config_map("dry-dependent", namespace)


@pytest.mark.parametrize(
    ("method", "options"),
    [("POST", "CreateOptions"), ("PUT", "UpdateOptions"), ("DELETE", "DeleteOptions")],
)
async def test_a_dry_run_value_other_than_all_is_refused(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str, method: str, options: str
) -> None:
    await core.create_namespaced_config_map(namespace, config_map("kept"))
    path = f"/api/v1/namespaces/{namespace}/configmaps" + ("" if method == "POST" else "/kept")
    body = (
        None
        if method == "DELETE"
        else {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}}
    )
    with pytest.raises(ApiException) as refused:
        await api.call_api(
            path, method, query_params=[("dryRun", "Foo"), ("dryRun", "All")], body=body,
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            auth_settings=["BearerToken"], _return_http_data_only=True,
        )  # fmt: skip
    assert refused.value.status == 422
    assert status_body(refused.value)["message"] == (
        f'{options}.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Foo","All"]: '
        'supported values: "All"'
    )
    assert not (await core.read_namespaced_config_map("kept", namespace)).data


@needs_kubectl
async def test_kubectl_server_side_dry_runs_and_diff_change_nothing(
    kubectl: Kubectl, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_config_map(namespace, config_map("live", a="1"))
    manifest = tmp_path / "cm.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "live"},
             "data": {"a": "2"}}
        )
    )  # fmt: skip
    out = await kubectl("apply", "-f", str(manifest), "--dry-run=server", "-o", "json")
    assert json.loads(out)["data"] == {"a": "2"}
    code, diff, err = await kubectl.result("diff", "-f", str(manifest))
    assert code == 1, err  # 1: differences found
    assert '-  a: "1"' in diff
    assert '+  a: "2"' in diff
    await kubectl("delete", "configmap", "live", "--dry-run=server")
    await kubectl("create", "deployment", "web", "--image=busybox", "--dry-run=server")
    assert (await core.read_namespaced_config_map("live", namespace)).data == {"a": "1"}
    assert await gone(lambda: client.AppsV1Api(api).read_namespaced_deployment(
        "web", namespace))  # fmt: skip
