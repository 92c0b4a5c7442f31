"""The PodResources v1 service of the kubelet emulator, read over its real socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import grpc
import pytest

from akri.proto.podresources.v1.api_pb2 import (
    AllocatableResourcesRequest,
    ContainerDevices,
    GetPodResourcesRequest,
    ListPodResourcesRequest,
    ListPodResourcesResponse,
    NUMANode,
    TopologyInfo,
)
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerStub
from akri.sim.kubelet import Container, Kubelet
from tests.kubelet.conftest import PluginFactory
from tests.kubelet.plugin import device

if TYPE_CHECKING:
    from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerAsyncStub

CAM = "akri.sh/cam"
MIC = "akri.sh/mic"
WAIT_S = 5.0


@contextlib.asynccontextmanager
async def lister(kubelet: Kubelet) -> AsyncIterator[PodResourcesListerAsyncStub]:
    """A client per use: a channel held by a fixture would outlive the suite's leak check."""
    async with grpc.aio.insecure_channel(f"unix://{kubelet.pod_resources_socket}") as channel:
        yield PodResourcesListerStub(channel)


async def list_pods(kubelet: Kubelet) -> ListPodResourcesResponse:
    async with lister(kubelet) as stub:
        return await stub.List(ListPodResourcesRequest(), timeout=WAIT_S)


@pytest.fixture
async def node(kubelet: Kubelet, make_plugin: PluginFactory) -> Kubelet:
    """cam: a, b on NUMA 0, c on NUMA 1, d unhealthy; mic: m1, m2 without topology."""
    await make_plugin(
        CAM,
        [device("a", numa=[0]), device("b", numa=[0]), device("c", numa=[1]), device("d", False)],
    )
    await make_plugin(MIC, [device("m1"), device("m2")])
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: kubelet.capacity() == {CAM: 4, MIC: 2})
    return kubelet


def devices(resource: str, ids: list[str], numa: int | None = None) -> ContainerDevices:
    topology = None if numa is None else TopologyInfo(nodes=[NUMANode(ID=numa)])
    return ContainerDevices(resource_name=resource, device_ids=ids, topology=topology)


async def test_list_reports_active_pods_containers_and_their_device_ids(node: Kubelet) -> None:
    await node.admit(
        "u1",
        "broker",
        "apps",
        init_containers=[
            Container("setup", {CAM: 1}),
            Container("sidecar", {MIC: 1}, restartable=True),
        ],
        containers=[Container("main", {CAM: 3, MIC: 1}), Container("idle")],
    )
    await node.admit("u2", "plain", "default", containers=[Container("c")])

    response = await list_pods(node)

    broker, plain = response.pod_resources
    assert (broker.name, broker.namespace) == ("broker", "apps")
    assert [c.name for c in broker.containers] == ["sidecar", "main", "idle"]
    sidecar, main, idle = broker.containers
    assert list(sidecar.devices) == [devices(MIC, ["m1"])]
    assert list(main.devices) == [
        devices(CAM, ["a", "b"], numa=0),
        devices(CAM, ["c"], numa=1),
        devices(MIC, ["m2"]),
    ]
    assert list(idle.devices) == []
    assert (plain.name, [c.name for c in plain.containers]) == ("plain", ["c"])

    node.remove_pod("u1")
    response = await list_pods(node)
    assert [p.name for p in response.pod_resources] == ["plain"]


async def test_get_reports_one_pod_or_fails(node: Kubelet) -> None:
    await node.admit("u1", "broker", "apps", containers=[Container("main", {MIC: 2})])
    async with lister(node) as stub:
        response = await stub.Get(
            GetPodResourcesRequest(pod_name="broker", pod_namespace="apps"), timeout=WAIT_S
        )
        assert response.pod_resources.name == "broker"
        assert list(response.pod_resources.containers[0].devices) == [devices(MIC, ["m1", "m2"])]
        try:
            await stub.Get(
                GetPodResourcesRequest(pod_name="broker", pod_namespace="default"), timeout=WAIT_S
            )
        except grpc.aio.AioRpcError as error:
            code, details = error.code(), error.details()
        else:
            pytest.fail("Get found a pod that does not exist")
    assert code == grpc.StatusCode.UNKNOWN
    assert details == "pod broker in namespace default not found"


async def test_allocatable_lists_each_healthy_device(node: Kubelet) -> None:
    await node.admit("u1", "broker", "apps", containers=[Container("main", {CAM: 1})])
    async with lister(node) as stub:
        request = AllocatableResourcesRequest()
        response = await stub.GetAllocatableResources(request, timeout=WAIT_S)
    assert list(response.devices) == [
        devices(CAM, ["a"], numa=0),
        devices(CAM, ["b"], numa=0),
        devices(CAM, ["c"], numa=1),
        devices(MIC, ["m1"]),
        devices(MIC, ["m2"]),
    ], "allocated devices stay allocatable; the unhealthy `d` is left out"
