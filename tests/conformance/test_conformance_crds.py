"""CRDs: discovery, schema defaults, pruning and validation, printer columns as a Table."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import (
    GROUP,
    MERGE_PATCH,
    PLURAL,
    VERSION,
    WIDGET_CRD,
    gone,
    raw_get,
    status_body,
    widget,
)
from tests.support import eventually

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


async def get_json(api: client.ApiClient, path: str, accept: str = "application/json") -> Any:
    response = await raw_get(api, path, {}, accept)
    try:
        assert response.status == 200, await response.text()
        return json.loads(await response.read())
    finally:
        response.release()


async def test_discovery_lists_the_custom_kind(api: client.ApiClient, widgets: None) -> None:
    groups = await get_json(api, "/apis")
    assert GROUP in {g["name"] for g in groups["groups"]}
    resources = await get_json(api, f"/apis/{GROUP}/{VERSION}")
    entries = {r["name"]: r for r in resources["resources"]}
    assert entries[PLURAL]["kind"] == "Widget"
    assert entries[PLURAL]["namespaced"] is True
    assert entries[PLURAL]["shortNames"] == ["wdg"]
    assert f"{PLURAL}/status" in entries
    core = await get_json(api, "/api/v1")
    assert {"pods", "nodes", "namespaces", "pods/status", "pods/binding"} <= {
        r["name"] for r in core["resources"]
    }
    version = await get_json(api, "/version")
    assert version["major"] == "1"


async def test_schema_defaults_are_applied(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    created = await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w")
    )
    assert created["spec"]["capacity"] == 1


async def test_unknown_fields_are_pruned_unless_preserved(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    body = widget("w", bogus="dropped", extra={"anything": {"goes": 1}})
    created = await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert "bogus" not in created["spec"]
    assert created["spec"]["extra"] == {"anything": {"goes": 1}}


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"color": "green"}, "spec.color"),  # enum
        ({"color": "red", "capacity": 0}, "spec.capacity"),  # minimum
        ({"color": "red", "capacity": "two"}, "spec.capacity"),  # type
        ({"color": "red", "label": "Upper"}, "spec.label"),  # pattern
        ({"capacity": 2}, "spec.color"),  # required
    ],
)
async def test_schema_violations_are_422(
    custom: client.CustomObjectsApi,
    namespace: str,
    widgets: None,
    spec: dict[str, Any],
    field: str,
) -> None:
    body = widget("w")
    body["spec"] = spec
    with pytest.raises(ApiException) as caught:
        await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    status = status_body(caught.value)
    assert caught.value.status == 422
    assert status["reason"] == "Invalid"
    assert field in [cause["field"] for cause in status["details"]["causes"]]


async def test_schema_is_checked_on_updates_too(
    custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    with pytest.raises(ApiException) as caught:
        await custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, "w", {"spec": {"capacity": -1}},
            **MERGE_PATCH,
        )  # fmt: skip
    assert caught.value.status == 422


async def test_printer_columns_as_table(
    api: client.ApiClient, custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("w", color="blue", capacity=3)
    )
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    table = await get_json(api, path, TABLE)
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Color", "Capacity", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:3] == ["w", "blue", 3]
    assert row["object"]["metadata"]["name"] == "w"
    single = await get_json(api, f"{path}/w", TABLE)
    assert single["rows"][0]["cells"][0] == "w"


async def test_builtin_table_has_sensible_columns(api: client.ApiClient) -> None:
    table = await get_json(api, "/api/v1/namespaces", TABLE)
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:2] == ["Name", "Status"]
    assert ["default", "Active"] in [row["cells"][:2] for row in table["rows"]]


async def test_deleting_the_crd_removes_its_objects(
    api: client.ApiClient, custom: client.CustomObjectsApi, namespace: str
) -> None:
    extensions = client.ApiextensionsV1Api(api)
    await extensions.create_custom_resource_definition(WIDGET_CRD)

    async def served() -> bool:
        try:
            await custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        return True

    await eventually(served, "the new kind to be served")
    await custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, widget("w"))
    await extensions.delete_custom_resource_definition(WIDGET_CRD["metadata"]["name"])
    await eventually(
        lambda: gone(
            lambda: custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
        ),
        "the kind to stop being served",
    )


async def test_invalid_crd_is_422(api: client.ApiClient) -> None:
    extensions = client.ApiextensionsV1Api(api)
    bad = json.loads(json.dumps(WIDGET_CRD))
    bad["metadata"]["name"] = "wrong-name.conformance.akri.sh"
    with pytest.raises(ApiException) as caught:
        await extensions.create_custom_resource_definition(bad)
    assert caught.value.status == 422
