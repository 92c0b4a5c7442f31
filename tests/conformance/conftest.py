"""Fixtures for the API conformance suite: one cluster per test, reached through kubernetes-asyncio.

By default each test starts the emulator. With `AKRI_CONFORMANCE_KUBECONFIG=<path>` the same
tests run against that cluster instead (tests marked `emulator_only` are skipped there), so a
difference between the emulator and a real API server shows up as a failing test.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.sim.apiserver import ApiServer
from tests.conformance.support import (
    FOREIGN_KUBECONFIG,
    GADGET_CRD,
    GIZMO_CRD,
    WIDGET_CRD,
    Cluster,
    gone,
    new_client,
)
from tests.kubectl import Kubectl
from tests.support import eventually


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "emulator_only: needs the emulator (fault injection or its settings)"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if FOREIGN_KUBECONFIG:
        skip = pytest.mark.skip(reason="emulator-only test; running against a foreign server")
        for item in items:
            if "emulator_only" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    if FOREIGN_KUBECONFIG:
        yield Cluster(Path(FOREIGN_KUBECONFIG), None)
    else:
        async with ApiServer(bookmark_interval_s=0.2, authorization=True) as server:
            yield Cluster(server.write_kubeconfig(tmp_path / "kubeconfig"), server)


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[client.ApiClient]:
    async with await new_client(cluster) as api_client:
        yield api_client


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
async def namespace(core: client.CoreV1Api) -> AsyncIterator[str]:
    """A fresh namespace per test, so tests never see each other's objects."""
    name = f"conf-{uuid.uuid4().hex[:8]}"
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await core.delete_namespace(name)


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path, namespace: str) -> Kubectl:
    return Kubectl(cluster.kubeconfig, tmp_path, namespace)


@pytest.fixture
async def widgets(api: client.ApiClient) -> AsyncIterator[None]:
    """The Widget CRD, established (created and removed around the test)."""
    async with established(api, WIDGET_CRD):
        yield


@pytest.fixture
async def gadgets(api: client.ApiClient) -> AsyncIterator[client.CustomObjectsApi]:
    """The Gadget CRD (validation rules), established around the test."""
    async with established(api, GADGET_CRD):
        yield client.CustomObjectsApi(api)


@pytest.fixture
async def gizmos(api: client.ApiClient) -> AsyncIterator[client.CustomObjectsApi]:
    """The Gizmo CRD (served as v1 and v2), established around the test."""
    async with established(api, GIZMO_CRD):
        yield client.CustomObjectsApi(api)


@contextlib.asynccontextmanager
async def established(api: client.ApiClient, definition: Any) -> AsyncIterator[None]:
    """A CRD created and established for the block, and removed after it."""
    extensions = client.ApiextensionsV1Api(api)
    name = definition["metadata"]["name"]
    await extensions.create_custom_resource_definition(definition)

    async def ready() -> bool:
        crd = await extensions.read_custom_resource_definition(name)
        conditions = (crd.status and crd.status.conditions) or []
        return any(c.type == "Established" and c.status == "True" for c in conditions)

    await eventually(ready, f"the CRD {name} to be established")
    yield
    await extensions.delete_custom_resource_definition(name)
    await eventually(
        lambda: gone(lambda: extensions.read_custom_resource_definition(name)), "CRD removal"
    )
