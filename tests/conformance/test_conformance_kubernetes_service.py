"""The `default/kubernetes` Service: the API server publishes it and re-creates it when deleted."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import DEADLINE_S, FOREIGN_KUBECONFIG, Cluster
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

LABELS = {"component": "apiserver", "provider": "kubernetes"}


async def test_the_api_server_publishes_the_kubernetes_service(core: client.CoreV1Api) -> None:
    service = await core.read_namespaced_service("kubernetes", "default")
    assert service.metadata.labels == LABELS
    assert service.spec.type == "ClusterIP"
    ipaddress.ip_address(service.spec.cluster_ip)  # an address of the service range
    assert service.spec.cluster_ips == [service.spec.cluster_ip]  # single-stack
    assert not service.spec.selector  # its endpoints are the API server's own, not pods
    [port] = service.spec.ports
    assert (port.name, port.port, port.protocol) == ("https", 443, "TCP")


@needs_kubectl
async def test_kubectl_shows_the_kubernetes_service(cluster: Cluster, tmp_path: Path) -> None:
    kubectl = Kubectl(cluster.kubeconfig, tmp_path, "default")
    [header, row] = (await kubectl("get", "svc", "kubernetes")).splitlines()
    assert header.split() == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    name, kind, cluster_ip, external_ip, ports, _ = row.split()
    assert (name, kind, external_ip, ports) == ("kubernetes", "ClusterIP", "<none>", "443/TCP")
    ipaddress.ip_address(cluster_ip)
    labels = await kubectl(
        "get", "svc", "-l", "component=apiserver,provider=kubernetes", "-o", "name"
    )
    assert labels.split() == ["service/kubernetes"]


async def test_a_deleted_kubernetes_service_comes_back(core: client.CoreV1Api) -> None:
    old = await core.read_namespaced_service("kubernetes", "default")
    await core.delete_namespaced_service("kubernetes", "default")

    async def recreated() -> client.V1Service | None:
        try:
            service = await core.read_namespaced_service("kubernetes", "default")
        except ApiException as error:
            if error.status == 404:
                return None
            raise
        return service if service.metadata.uid != old.metadata.uid else None

    # A real API server checks every 10 s; the deadline only catches a server that never does.
    service = await eventually(recreated, "the kubernetes Service to be re-created", DEADLINE_S)
    assert service.metadata.labels == LABELS
    assert service.spec.cluster_ip == old.spec.cluster_ip
    assert [(p.name, p.port, p.protocol) for p in service.spec.ports] == [("https", 443, "TCP")]


async def published_endpoints(core: client.CoreV1Api) -> client.V1Endpoints:
    """The `kubernetes` Endpoints; a foreign server without them runs no endpoint reconciler
    (--endpoint-reconciler-type=none), so these cases cannot be judged there."""
    try:
        return await core.read_namespaced_endpoints("kubernetes", "default")
    except ApiException as error:
        if error.status == 404 and FOREIGN_KUBECONFIG:
            pytest.skip("the server publishes no kubernetes Endpoints (no endpoint reconciler)")
        raise


async def test_its_endpoints_lead_to_the_api_server(api: client.ApiClient) -> None:
    core, discovery = client.CoreV1Api(api), client.DiscoveryV1Api(api)
    endpoints = await published_endpoints(core)
    [subset] = endpoints.subsets
    assert subset.addresses
    [port] = subset.ports
    assert (port.name, port.protocol) == ("https", "TCP")
    slices = await discovery.list_namespaced_endpoint_slice(
        "default", label_selector="kubernetes.io/service-name=kubernetes"
    )
    [endpoint_slice] = slices.items
    assert [(p.name, p.port, p.protocol) for p in endpoint_slice.ports] == [
        ("https", port.port, "TCP")
    ]
    assert {a for e in endpoint_slice.endpoints for a in e.addresses} == {
        a.ip for a in subset.addresses
    }


async def test_changed_endpoints_are_put_back(core: client.CoreV1Api) -> None:
    before = await published_endpoints(core)
    await core.patch_namespaced_endpoints(
        "kubernetes", "default", [{"op": "replace", "path": "/subsets/0/ports/0/port", "value": 1}]
    )

    async def put_back() -> bool:
        now = await core.read_namespaced_endpoints("kubernetes", "default")
        return bool(now.subsets[0].ports[0].port == before.subsets[0].ports[0].port)

    # A real API server checks every 10 s; the deadline only catches a server that never does.
    await eventually(put_back, "the kubernetes Endpoints to be put back", DEADLINE_S)
