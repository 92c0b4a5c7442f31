"""Attacks through akri's API side, each a real attempt against an API server that decides.

By default each test starts the API emulator with RBAC on. With
`AKRI_CONFORMANCE_KUBECONFIG=<path>` (as for tests/conformance) the same attempts go to that
cluster instead, a real one where the real API server evaluates the chart's
ValidatingAdmissionPolicies; the webhook is then served by this process on 127.0.0.1, so the
tests must run where that address reaches them (the rig's network namespace).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from akri.api import crd_definitions
from akri.sim.apiserver import ApiServer
from tests.conformance.support import FOREIGN_KUBECONFIG, Cluster, new_client
from tests.security.support import Secured, secured_cluster


@pytest.fixture
async def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Cluster]:
    """The cluster an attack is made on: the foreign one when given, else the emulator with
    RBAC on. Attacks on a node (marked `node_side`) need no real API server and must leave
    nothing on one: they get the emulator the agent tests use (the CRDs served, no RBAC)."""
    if request.node.get_closest_marker("node_side") is not None:
        async with ApiServer() as server:
            await server.apply_definitions(crd_definitions())
            yield Cluster(server.write_kubeconfig(tmp_path / "kubeconfig"), server)
    elif FOREIGN_KUBECONFIG:
        yield Cluster(Path(FOREIGN_KUBECONFIG), None)
    else:
        async with ApiServer(authorization=True) as server:
            yield Cluster(server.write_kubeconfig(tmp_path / "kubeconfig"), server)


@pytest.fixture
async def api(cluster: Cluster) -> AsyncIterator[client.ApiClient]:
    async with await new_client(cluster) as api_client:
        yield api_client


@pytest.fixture
async def secured(
    cluster: Cluster, api: client.ApiClient, tmp_path: Path
) -> AsyncIterator[Secured]:
    """The chart's CRDs, admission policies and webhook in force, and a fresh namespace."""
    async with secured_cluster(cluster, api, tmp_path) as found:
        yield found
