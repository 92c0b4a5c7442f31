"""Status subresource, generation, finalizers, garbage collection, namespace termination."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import (
    COLLECTION_DEADLINE_S,
    GROUP,
    MERGE_PATCH,
    NO_SCHEDULER,
    PLURAL,
    VERSION,
    gone,
    widget,
)
from tests.support import eventually


def owner_reference(owner: Any, kind: str, api_version: str) -> Any:
    """A reference as a plain dict, which both model and dict bodies accept."""
    meta = owner["metadata"] if isinstance(owner, dict) else owner.metadata.to_dict()
    return {"apiVersion": api_version, "kind": kind, "name": meta["name"], "uid": meta["uid"]}


async def test_status_subresource_splits_spec_and_status(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    body = widget("w")
    body["status"] = {"ready": True}
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert "status" not in created  # status is not taken on create

    main = await custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w",
        {"spec": {"capacity": 2}, "status": {"ready": True}}, **MERGE_PATCH,
    )  # fmt: skip
    assert main["spec"]["capacity"] == 2
    assert "status" not in main  # the main resource ignores status

    status = await custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "w",
        {"spec": {"capacity": 5}, "status": {"ready": True, "count": 3}}, **MERGE_PATCH,
    )  # fmt: skip
    assert status["status"] == {"ready": True, "count": 3}
    assert status["spec"]["capacity"] == 2  # /status ignores everything but status

    status["status"]["count"] = 4
    replaced = await custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, "w", status
    )
    assert replaced["status"]["count"] == 4
    with pytest.raises(ApiException) as caught:  # the same body again is stale now
        await custom.replace_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, "w", status
        )
    assert caught.value.status == 409


async def test_generation_bumps_on_spec_changes_only(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    created = await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w")
    )
    assert created["metadata"]["generation"] == 1

    async def patch(body: dict[str, Any], status: bool = False) -> Any:
        call = (
            custom.patch_namespaced_custom_object_status
            if status
            else custom.patch_namespaced_custom_object
        )
        return await call(GROUP, VERSION, namespace, PLURAL, "w", body, **MERGE_PATCH)

    assert (await patch({"spec": {"capacity": 3}}))["metadata"]["generation"] == 2
    labelled = await patch({"metadata": {"labels": {"a": "b"}}})
    assert labelled["metadata"]["generation"] == 2
    assert (await patch({"status": {"ready": True}}, status=True))["metadata"]["generation"] == 2
    assert (await patch({"spec": {"capacity": 4}}))["metadata"]["generation"] == 3


async def test_node_and_pod_status_subresources(core: client.CoreV1Api, namespace: str) -> None:
    name = f"node-{namespace}"
    await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    try:
        ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}
        patched = await core.patch_node_status(name, {"status": {"conditions": [ready]}})
        assert [(c.type, c.status) for c in patched.status.conditions] == [("Ready", "True")]
        ignored = await core.patch_node(
            name, {"status": {"conditions": [{**ready, "status": "False"}]}}
        )
        assert [(c.type, c.status) for c in ignored.status.conditions] == [("Ready", "True")]
    finally:
        await core.delete_node(name)

    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="p"),
        spec=client.V1PodSpec(
            scheduler_name=NO_SCHEDULER, containers=[client.V1Container(name="c", image="i")]
        ),
    )
    created = await core.create_namespaced_pod(namespace, pod)
    assert created.status.phase == "Pending"
    running = await core.patch_namespaced_pod_status(
        "p", namespace, {"status": {"phase": "Running"}}
    )
    assert running.status.phase == "Running"
    listed = await core.list_namespaced_pod(namespace, field_selector="status.phase=Running")
    assert [p.metadata.name for p in listed.items] == ["p"]


async def test_job_status_subresource(api: client.ApiClient, namespace: str) -> None:
    batch = client.BatchV1Api(api)
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="job"),
        spec=client.V1JobSpec(
            template=client.V1PodTemplateSpec(
                spec=client.V1PodSpec(
                    restart_policy="Never", containers=[client.V1Container(name="c", image="i")]
                )
            )
        ),
    )
    created = await batch.create_namespaced_job(namespace, job)
    assert created.metadata.generation == 1
    done = await batch.patch_namespaced_job_status("job", namespace, {"status": {"succeeded": 1}})
    assert done.status.succeeded == 1
    assert done.metadata.generation == 1
    await batch.delete_namespaced_job("job", namespace, propagation_policy="Background")


async def test_finalizers_hold_deletion_until_removed(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    body = widget("w")
    body["metadata"]["finalizers"] = ["conformance.akri.sh/hold"]
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    await custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    held = await custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    assert held["metadata"]["deletionTimestamp"]
    assert held["metadata"]["finalizers"] == ["conformance.akri.sh/hold"]

    with pytest.raises(ApiException) as caught:  # no new finalizers while deleting
        await custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "w",
            {"metadata": {"finalizers": ["conformance.akri.sh/hold", "another/one"]}},
            **MERGE_PATCH,
        )  # fmt: skip
    assert caught.value.status == 422

    await custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w",
        {"metadata": {"finalizers": None}}, **MERGE_PATCH,
    )  # fmt: skip
    assert await gone(
        lambda: custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w")
    )


async def test_owner_deletion_cascades_transitively(
    core: client.CoreV1Api, custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    owner = await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("owner")
    )
    child = widget("child")
    child["metadata"]["ownerReferences"] = [owner_reference(owner, "Widget", f"{GROUP}/{VERSION}")]
    child = await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, child)
    grandchild = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="grandchild",
            owner_references=[owner_reference(child, "Widget", f"{GROUP}/{VERSION}")],
        )
    )
    await core.create_namespaced_config_map(namespace, grandchild)
    survivor = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="survivor"))
    )
    two_owners = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="two-owners",
            owner_references=[
                owner_reference(owner, "Widget", f"{GROUP}/{VERSION}"),
                owner_reference(survivor, "ConfigMap", "v1"),
            ],
        )
    )
    await core.create_namespaced_config_map(namespace, two_owners)

    await custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "owner")
    await eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("grandchild", namespace)),
        "the grandchild to be collected",
        deadline_s=COLLECTION_DEADLINE_S,
    )
    assert await gone(
        lambda: custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "child")
    )

    async def only_survivor_owns() -> bool:
        kept = await core.read_namespaced_config_map("two-owners", namespace)
        return [r.name for r in kept.metadata.owner_references or []] == ["survivor"]

    await eventually(
        only_survivor_owns, "the dangling reference to be dropped", COLLECTION_DEADLINE_S
    )


async def test_orphan_propagation_keeps_dependents(core: client.CoreV1Api, namespace: str) -> None:
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    dependent = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="dependent", owner_references=[owner_reference(owner, "ConfigMap", "v1")]
        )
    )
    await core.create_namespaced_config_map(namespace, dependent)
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Orphan")
    await eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("owner", namespace)),
        "the owner to be deleted",
    )
    kept = await core.read_namespaced_config_map("dependent", namespace)
    assert not kept.metadata.owner_references


async def test_foreground_deletion_removes_dependents_first(
    core: client.CoreV1Api, namespace: str
) -> None:
    owner = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    dependent = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="dependent", owner_references=[owner_reference(owner, "ConfigMap", "v1")]
        )
    )
    await core.create_namespaced_config_map(namespace, dependent)
    await core.delete_namespaced_config_map("owner", namespace, propagation_policy="Foreground")
    await eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("owner", namespace)),
        "the owner to be deleted after its dependents",
    )
    assert await gone(lambda: core.read_namespaced_config_map("dependent", namespace))


async def test_dependent_of_a_missing_owner_is_collected(
    core: client.CoreV1Api, namespace: str
) -> None:
    orphan = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(
            name="dangling",
            owner_references=[
                client.V1OwnerReference(
                    api_version="v1", kind="ConfigMap", name="never", uid="0000-never"
                )
            ],
        )
    )
    await core.create_namespaced_config_map(namespace, orphan)
    await eventually(
        lambda: gone(lambda: core.read_namespaced_config_map("dangling", namespace)),
        "the dependent of a missing owner to be collected",
    )


async def test_the_system_namespaces_may_not_be_deleted(core: client.CoreV1Api) -> None:
    for name in ("default", "kube-system", "kube-public"):
        with pytest.raises(ApiException) as refused:
            await core.delete_namespace(name)
        assert refused.value.status == 403
        assert (
            "this namespace may not be deleted" in json.loads(refused.value.body or "{}")["message"]
        )
        namespace = await core.read_namespace(name)
        assert namespace.metadata.deletion_timestamp is None


async def test_namespace_deletion_terminates_then_removes(core: client.CoreV1Api) -> None:
    name = "conformance-doomed"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    await core.create_namespaced_config_map(
        name, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="content"))
    )
    await core.delete_namespace(name)
    await eventually(lambda: gone(lambda: core.read_namespace(name)), "namespace removal")
    assert await gone(lambda: core.read_namespaced_config_map("content", name))
