"""The shared-pool ResourceSlice the controller writes in DRA mode is one the API server takes.

Its per-device node selection once listed several nodes in one `metadata.name` field
requirement, which kube-apiserver refuses with 422 ("must be only one value when `operator` is
'In' or 'NotIn' for node field selector") while the emulator took it: no shared device was
ever published on a real cluster. This case writes the slice exactly as `akri.dra` builds it.
"""

from __future__ import annotations

import uuid

import pytest
from kubernetes_asyncio import client

from akri.api import Configuration, Instance
from akri.dra.devices import published_devices
from akri.dra.slices import Pool, plan, shared_pool_name


def configuration(name: str, unique: bool) -> Configuration:
    return Configuration.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Configuration",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"discoveryHandler": {"name": "debugEcho"}, "uniqueDevices": unique},
        }
    )


def instance(name: str, configuration: str, nodes: list[str]) -> Instance:
    return Instance.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "configurationName": configuration,
                "capacity": 2,
                "shared": True,
                "nodes": nodes,
            },
        }
    )


@pytest.mark.parametrize("unique", [True, False])
async def test_shared_pool_slice_of_devices_seen_by_several_nodes_is_accepted(
    custom: client.CustomObjectsApi, unique: bool
) -> None:
    name = f"conf-{uuid.uuid4().hex[:8]}"
    found = configuration(name, unique)
    devices = []
    for suffix, nodes in (("a", ["node-a", "node-b"]), ("b", ["node-b"])):
        mapped = published_devices(
            instance(f"{name}-{suffix}", name, nodes), found, per_device_nodes=True
        )
        devices += mapped.devices
    (body,) = plan(Pool(shared_pool_name(name), None, devices), []).creates
    created = await custom.create_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices", body
    )
    try:
        assert created["spec"]["devices"] == body["spec"]["devices"]
    finally:
        await custom.delete_cluster_custom_object(
            "resource.k8s.io", "v1", "resourceslices", created["metadata"]["name"]
        )
