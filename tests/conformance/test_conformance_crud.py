"""Create, read, update, patch, delete: codes, Status bodies, server-owned metadata, selectors."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import (
    GROUP,
    MERGE_PATCH,
    NO_SCHEDULER,
    PLURAL,
    STRATEGIC_PATCH,
    VERSION,
    status_body,
    widget,
)


def pod(name: str, **labels: str) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or None),
        spec=client.V1PodSpec(
            scheduler_name=NO_SCHEDULER,
            containers=[
                client.V1Container(
                    name="main", image="busybox", env=[client.V1EnvVar(name="A", value="1")]
                )
            ],
        ),
    )


def deployment(name: str) -> client.V1Deployment:
    """A Deployment of no replicas: its spec may change, and nothing runs."""
    template = pod(name, app=name)
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=0,
            selector=client.V1LabelSelector(match_labels={"app": name}),
            template=client.V1PodTemplateSpec(metadata=template.metadata, spec=template.spec),
        ),
    )


async def test_create_answers_201_with_server_metadata(
    core: client.CoreV1Api, namespace: str
) -> None:
    created, code, _ = await core.create_namespaced_config_map_with_http_info(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"k": "v"})
    )
    assert code == 201
    assert created.metadata.uid
    assert created.metadata.creation_timestamp is not None
    assert int(created.metadata.resource_version) > 0
    assert created.metadata.namespace == namespace


async def test_resource_versions_increase_across_objects_and_lists(
    core: client.CoreV1Api, namespace: str
) -> None:
    first: Any = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="a"))
    )
    second = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="b"))
    )
    listed = await core.list_namespaced_config_map(namespace)
    assert int(second.metadata.resource_version) > int(first.metadata.resource_version)
    assert int(listed.metadata.resource_version) >= int(second.metadata.resource_version)
    assert {"a", "b"} <= {item.metadata.name for item in listed.items}


async def test_missing_object_is_404_status(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        await core.read_namespaced_config_map("absent", namespace)
    body = status_body(caught.value)
    assert caught.value.status == 404
    assert body["kind"] == "Status"
    assert body["apiVersion"] == "v1"
    assert body["status"] == "Failure"
    assert body["reason"] == "NotFound"
    assert body["code"] == 404
    assert body["details"]["name"] == "absent"
    assert "absent" in body["message"]


async def test_duplicate_create_is_409_already_exists(
    core: client.CoreV1Api, namespace: str
) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="dup"))
    await core.create_namespaced_config_map(namespace, body)
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map(namespace, body)
    assert caught.value.status == 409
    assert status_body(caught.value)["reason"] == "AlreadyExists"


async def test_create_in_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map(
            "no-such-namespace", client.V1ConfigMap(metadata=client.V1ObjectMeta(name="x"))
        )
    assert caught.value.status == 404


async def test_generate_name(core: client.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="gen-"))
    )
    assert created.metadata.name.startswith("gen-")
    assert len(created.metadata.name) > len("gen-")


async def test_invalid_name_is_422(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="Not_Valid"))
        )
    assert caught.value.status == 422
    assert status_body(caught.value)["reason"] == "Invalid"


async def test_stale_update_is_409_conflict(core: client.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"n": "0"})
    )
    created.data = {"n": "1"}
    updated = await core.replace_namespaced_config_map("cm", namespace, created)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    created.data = {"n": "2"}  # still carries the old resourceVersion
    with pytest.raises(ApiException) as caught:
        await core.replace_namespaced_config_map("cm", namespace, created)
    assert caught.value.status == 409
    assert status_body(caught.value)["reason"] == "Conflict"
    assert (await core.read_namespaced_config_map("cm", namespace)).data == {"n": "1"}


async def test_stale_patch_is_409_conflict(core: client.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"n": "0"})
    )
    await core.patch_namespaced_config_map("cm", namespace, {"data": {"n": "1"}})
    stale = {"metadata": {"resourceVersion": created.metadata.resource_version}, "data": {"n": "2"}}
    with pytest.raises(ApiException) as caught:
        await core.patch_namespaced_config_map("cm", namespace, stale)
    assert caught.value.status == 409


async def test_noop_write_keeps_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"), data={"k": "v"})
    )
    patched = await core.patch_namespaced_config_map("cm", namespace, {"data": {"k": "v"}})
    assert patched.metadata.resource_version == created.metadata.resource_version


async def test_merge_patch_on_custom_object(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w", label="abc", nodes=["a"])
    )
    patched = await custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        "w",
        {"spec": {"nodes": ["a", "b"], "label": None}},
        **MERGE_PATCH,
    )
    assert patched["spec"]["nodes"] == ["a", "b"]
    assert "label" not in patched["spec"]
    assert patched["spec"]["color"] == "red"


async def test_json_patch_with_test_operation(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    created = await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w", nodes=["a"])
    )
    version = created["metadata"]["resourceVersion"]
    guarded = [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {"op": "add", "path": "/spec/nodes/-", "value": "b"},
    ]
    patched = await custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "w", guarded
    )
    assert patched["spec"]["nodes"] == ["a", "b"]
    with pytest.raises(ApiException) as caught:  # the same guard is now stale
        await custom.patch_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "w", guarded)
    assert caught.value.status in (409, 422)


async def test_json_patch_needs_an_array(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(ApiException) as caught:  # the client's default type for a dict body
        await custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "w", {"spec": {"capacity": 2}}
        )
    assert caught.value.status == 400


async def test_strategic_merge_patch_merges_containers_and_env(
    api: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    await apps.create_namespaced_deployment(namespace, deployment("d"))
    containers = [{"name": "main", "env": [{"name": "B", "value": "2"}]}]
    patch = {"spec": {"template": {"spec": {"containers": containers}}}}
    patched = await apps.patch_namespaced_deployment("d", namespace, patch)
    container = patched.spec.template.spec.containers[0]
    assert container.image == "busybox"
    # The patch's new item goes first, as a real server merges (B before the stored A).
    assert [(e.name, e.value) for e in container.env] == [("B", "2"), ("A", "1")]


async def test_pod_updates_may_change_only_images_and_add_tolerations(
    core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_pod(namespace, pod("p"))
    image = {"spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]}}
    assert (await core.patch_namespaced_pod("p", namespace, image)).spec.containers[0].image == (
        "busybox:1.36"
    )
    toleration = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    tolerated = await core.patch_namespaced_pod(
        "p", namespace, {"spec": {"tolerations": [toleration]}}
    )
    assert [t.key for t in tolerated.spec.tolerations or []].count("k") == 1

    env = {"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}]}}
    with pytest.raises(ApiException) as refused:
        await core.patch_namespaced_pod("p", namespace, env)
    assert refused.value.status == 422
    message = status_body(refused.value)["message"]
    assert message.startswith(
        'Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than '
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
        "`spec.tolerations` (only additions to existing tolerations),"
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)"
    ), message
    kept = await core.read_namespaced_pod("p", namespace)
    assert [e.name for e in kept.spec.containers[0].env] == ["A"]


async def test_strategic_merge_patch_is_refused_for_custom_objects(
    api: client.ApiClient, namespace: str, widgets: None
) -> None:
    custom = client.CustomObjectsApi(api)
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(ApiException) as caught:
        await custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            "w",
            {"spec": {"capacity": 2}},
            **STRATEGIC_PATCH,
        )
    assert caught.value.status == 415


async def test_put_of_custom_object_needs_resource_version(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(ApiException) as caught:
        await custom.replace_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "w", widget("w", capacity=3)
        )
    assert caught.value.status == 422


async def test_name_mismatch_is_400(core: client.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="one"))
    )
    with pytest.raises(ApiException) as caught:
        await core.replace_namespaced_config_map(
            "one", namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="two"))
        )
    assert caught.value.status == 400


async def test_delete_returns_status_or_object_by_kind(
    core: client.CoreV1Api, namespace: str
) -> None:
    await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"))
    )
    await core.create_namespaced_pod(namespace, pod("p"))
    status = await core.delete_namespaced_config_map("cm", namespace)
    deleted_pod = await core.delete_namespaced_pod("p", namespace)
    assert status.status == "Success"
    assert deleted_pod.metadata.name == "p"
    with pytest.raises(ApiException) as caught:
        await core.delete_namespaced_config_map("cm", namespace)
    assert caught.value.status == 404


async def test_delete_precondition_on_uid(core: client.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="cm"))
    )
    options = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-the-uid"))
    with pytest.raises(ApiException) as caught:
        await core.delete_namespaced_config_map("cm", namespace, body=options)
    assert caught.value.status == 409


async def test_cluster_scoped_nodes(core: client.CoreV1Api) -> None:
    name = "conformance-node"
    node = await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    try:
        assert node.metadata.namespace is None
        listed = await core.list_node(field_selector=f"metadata.name={name}")
        assert [n.metadata.name for n in listed.items] == [name]
    finally:
        await core.delete_node(name)


async def test_list_across_namespaces_with_label_selectors(
    core: client.CoreV1Api, namespace: str
) -> None:
    other = f"{namespace}-b"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=other)))
    try:
        for ns, name, labels in [
            (namespace, "a", {"app": "x", "tier": "web"}),
            (other, "b", {"app": "x", "tier": "db"}),
            (other, "c", {"app": "y"}),
        ]:
            body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name, labels=labels))
            await core.create_namespaced_config_map(ns, body)

        async def names(selector: str) -> set[str]:
            listed = await core.list_config_map_for_all_namespaces(label_selector=selector)
            return {item.metadata.name for item in listed.items}

        assert await names("app=x") == {"a", "b"}
        assert await names("app==x,tier!=web") == {"b"}
        assert await names("app in (x, y),tier notin (db)") == {"a", "c"}
        assert await names("tier") == {"a", "b"}
        assert await names("app,!tier") == {"c"}
        assert await names("app=z") == set()
    finally:
        await core.delete_namespace(other)


async def test_field_selectors(core: client.CoreV1Api, namespace: str) -> None:
    first, second = pod("p1"), pod("p2")
    first.spec.node_name = "node-a"
    await core.create_namespaced_pod(namespace, first)
    await core.create_namespaced_pod(namespace, second)

    async def names(selector: str) -> set[str]:
        listed = await core.list_namespaced_pod(namespace, field_selector=selector)
        return {item.metadata.name for item in listed.items}

    assert await names("spec.nodeName=node-a") == {"p1"}
    assert await names("spec.nodeName!=node-a") == {"p2"}
    assert await names("status.phase=Pending,metadata.name=p2") == {"p2"}
    assert await names(f"metadata.namespace={namespace}") == {"p1", "p2"}
    with pytest.raises(ApiException) as caught:
        await names("spec.unknownField=x")
    assert caught.value.status == 400


async def test_event_field_selectors_for_describe(core: client.CoreV1Api, namespace: str) -> None:
    for name, involved in [("e1", "target"), ("e2", "other")]:
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=name),
            involved_object=client.V1ObjectReference(
                kind="Pod", name=involved, namespace=namespace
            ),
            reason="Testing",
            message="hello",
            type="Normal",
        )
        await core.create_namespaced_event(namespace, event)
    listed = await core.list_namespaced_event(
        namespace, field_selector="involvedObject.name=target,involvedObject.kind=Pod"
    )
    assert [e.metadata.name for e in listed.items] == ["e1"]


async def test_pagination_with_limit_and_continue(core: client.CoreV1Api, namespace: str) -> None:
    for index in range(5):
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=f"cm-{index}"))
        await core.create_namespaced_config_map(namespace, body)
    seen: list[str] = []
    token = ""
    while True:
        paging: dict[str, Any] = {"_continue": token} if token else {}
        page = await core.list_namespaced_config_map(namespace, limit=2, **paging)
        seen += [item.metadata.name for item in page.items]
        token = page.metadata._continue
        if not token:
            break
    # A real cluster adds kube-root-ca.crt to every namespace.
    assert sorted(s for s in seen if s.startswith("cm-")) == [f"cm-{i}" for i in range(5)]
    assert len(seen) == len(set(seen))


async def test_lease_round_trip(api: client.ApiClient, namespace: str) -> None:
    leases = client.CoordinationV1Api(api)
    lease = client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15),
    )
    created = await leases.create_namespaced_lease(namespace, lease)
    created.spec.holder_identity = "b"
    replaced = await leases.replace_namespaced_lease("leader", namespace, created)
    assert replaced.spec.holder_identity == "b"
    created.spec.holder_identity = "c"
    with pytest.raises(ApiException) as caught:
        await leases.replace_namespaced_lease("leader", namespace, created)
    assert caught.value.status == 409


async def test_pod_binding_sets_node_name(core: client.CoreV1Api, namespace: str) -> None:
    await core.create_namespaced_pod(namespace, pod("p"))
    binding = client.V1Binding(
        metadata=client.V1ObjectMeta(name="p"),
        target=client.V1ObjectReference(kind="Node", name="node-a"),
    )
    # The answer is a Status, which the client cannot read as a V1Binding: take it raw.
    first: Any = await core.create_namespaced_pod_binding(
        "p", namespace, binding, _preload_content=False
    )
    again: Any = await core.create_namespaced_pod_binding(
        "p", namespace, binding, _preload_content=False
    )
    bound = await core.read_namespaced_pod("p", namespace)
    assert (first.status, again.status) == (201, 409)
    first.release()
    again.release()
    assert bound.spec.node_name == "node-a"


async def test_secret_string_data_is_stored_as_base64_data(
    core: client.CoreV1Api, namespace: str
) -> None:
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name="creds"),
        data={"kept": "a2VwdA=="},
        string_data={"user": "admin", "kept": "overridden"},
    )
    await core.create_namespaced_secret(namespace, secret)
    stored = await core.read_namespaced_secret("creds", namespace)
    assert stored.data == {"kept": "b3ZlcnJpZGRlbg==", "user": "YWRtaW4="}
    assert stored.string_data is None

    await core.patch_namespaced_secret("creds", namespace, {"stringData": {"user": "root"}})
    patched = await core.read_namespaced_secret("creds", namespace)
    assert patched.data["user"] == "cm9vdA=="


def device_pod(name: str, resources: dict[str, Any]) -> Any:
    container = {"name": "main", "image": "busybox", "resources": resources}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container]},
    }


async def test_a_quantity_that_does_not_parse_is_400(
    core: client.CoreV1Api, namespace: str
) -> None:
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod(
            namespace, device_pod("p", {"limits": {"akri.sh/cam": "abc"}})
        )
    assert caught.value.status == 400
    assert "quantities must match the regular expression" in status_body(caught.value)["message"]


@pytest.mark.parametrize(
    ("resources", "cause"),
    [
        ({"limits": {"akri.sh/cam": "1.5"}}, 'Invalid value: "1500m": must be an integer'),
        ({"limits": {"akri.sh/cam": "-1"}}, "must be greater than or equal to 0"),
        (
            {"limits": {"akri.sh/cam": "2"}, "requests": {"akri.sh/cam": "1"}},
            "must be equal to akri.sh/cam limit of 2",
        ),
    ],
)
async def test_invalid_device_quantities_are_422(
    core: client.CoreV1Api, namespace: str, resources: dict[str, Any], cause: str
) -> None:
    with pytest.raises(ApiException) as caught:
        await core.create_namespaced_pod(namespace, device_pod("p", resources))
    assert caught.value.status == 422
    body = status_body(caught.value)
    assert body["reason"] == "Invalid"
    assert any(cause in c["message"] for c in body["details"]["causes"])


async def test_zero_devices_are_a_valid_request(core: client.CoreV1Api, namespace: str) -> None:
    created = await core.create_namespaced_pod(
        namespace, device_pod("p", {"limits": {"akri.sh/cam": 0}})
    )
    assert created.spec.containers[0].resources.limits == {"akri.sh/cam": "0"}
