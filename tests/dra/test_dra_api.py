"""The emulator serves `resource.k8s.io/v1` as Kubernetes 1.36 does, or not at all when told."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from akri.dra.slices import Pool, local_pool_name, plan
from akri.sim.apiserver import ApiServer

GROUP, VERSION = "resource.k8s.io", "v1"


async def connect(server: ApiServer, tmp_path: Path) -> client.ApiClient:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    api: client.ApiClient = await config.new_client_from_config(
        config_file=str(kubeconfig), persist_config=False
    )
    return api


@pytest.fixture
def objects(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def devices(n: int, **extra: Any) -> list[dict[str, Any]]:
    return [{"name": f"d{i}", **extra} for i in range(n)]


def resource_slice(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    body = {"driver": "akri.sh", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}
    return {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceSlice",
            "metadata": {"name": name}, "spec": {**body, **spec}}  # fmt: skip


async def test_discovery_lists_the_dra_kinds(api: client.ApiClient) -> None:
    resources = await client.ApisApi(api).get_api_versions()
    group = next(g for g in resources.groups if g.name == GROUP)
    assert group.preferred_version.version == VERSION
    listing = await client.CustomObjectsApi(api).get_api_resources(GROUP, VERSION)
    kinds = {(r.kind, r.namespaced) for r in listing.resources}
    assert kinds == {
        ("DeviceClass", False),
        ("ResourceClaim", True),
        ("ResourceClaimTemplate", True),
        ("ResourceSlice", False),
    }


async def test_a_planned_pool_is_accepted_and_found_by_node(
    objects: client.CustomObjectsApi,
) -> None:
    pool = Pool(local_pool_name("cfg", "n1"), "n1", devices(100, allowMultipleAllocations=True))
    for item in plan(pool, []).creates:
        await objects.create_cluster_custom_object(GROUP, VERSION, "resourceslices", item)
    other = resource_slice("other", {"nodeName": "n2", "devices": devices(1)})
    await objects.create_cluster_custom_object(GROUP, VERSION, "resourceslices", other)
    found = await objects.list_cluster_custom_object(
        GROUP, VERSION, "resourceslices", field_selector="spec.nodeName=n1,spec.driver=akri.sh"
    )
    assert len(found["items"]) == 2
    assert sum(len(s["spec"]["devices"]) for s in found["items"]) == 100


@pytest.mark.parametrize(
    "spec",
    [
        {"devices": devices(1)},  # no node selection
        {"nodeName": "n", "allNodes": True, "devices": devices(1)},
        {"nodeName": "n", "devices": devices(129)},
        # 64 with taints; multiple allocations alone do not lower the limit (kube-apiserver 1.36)
        {"nodeName": "n", "devices": devices(65, taints=[{"key": "k", "effect": "NoSchedule"}])},
        {"nodeName": "n", "devices": [{"name": "a"}, {"name": "a"}]},
        {"nodeName": "n", "devices": [{"name": "a", "nodeName": "n"}]},
        {"perDeviceNodeSelection": True, "devices": [{"name": "a"}]},
    ],
)
async def test_invalid_slices_are_refused(
    objects: client.CustomObjectsApi, spec: dict[str, Any]
) -> None:
    with pytest.raises(ApiException) as refused:
        await objects.create_cluster_custom_object(
            GROUP, VERSION, "resourceslices", resource_slice("bad", spec)
        )
    assert refused.value.status == 422


async def test_claim_status_is_a_subresource(objects: client.CustomObjectsApi) -> None:
    claim = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "x"}}]}},
        "status": {"allocation": {"devices": {"results": []}}},
    }
    created = await objects.create_namespaced_custom_object(
        GROUP, VERSION, "default", "resourceclaims", claim
    )
    assert "allocation" not in created.get("status", {})
    created["status"] = {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}
    updated = await objects.replace_namespaced_custom_object_status(
        GROUP, VERSION, "default", "resourceclaims", "c", created
    )
    assert updated["status"]["reservedFor"][0]["name"] == "p"


async def test_a_server_without_dra_does_not_serve_the_group(tmp_path: Path) -> None:
    async with ApiServer(dra=False) as server:
        api = await connect(server, tmp_path)
        async with api:
            groups = await client.ApisApi(api).get_api_versions()
            assert GROUP not in {g.name for g in groups.groups}
            with pytest.raises(ApiException) as missing:
                await client.CustomObjectsApi(api).list_cluster_custom_object(
                    GROUP, VERSION, "resourceslices"
                )
            assert missing.value.status == 404
