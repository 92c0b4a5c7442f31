"""The kubelet's `v1.PodResourcesLister` on `<pod-resources dir>/kubelet.sock`.

Shapes follow the kubelet: `List`/`Get` group a container's ids per resource and NUMA node;
`GetAllocatableResources` lists each healthy device on its own (per NUMA node).
Only app containers and sidecars (restartable init containers) are listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import grpc

from akri.proto.podresources.v1.api_pb2 import (
    AllocatableResourcesRequest,
    AllocatableResourcesResponse,
    ContainerDevices,
    ContainerResources,
    GetPodResourcesRequest,
    GetPodResourcesResponse,
    ListPodResourcesRequest,
    ListPodResourcesResponse,
    NUMANode,
    PodResources,
    TopologyInfo,
)
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerServicer
from akri.sim.kubelet.devices import ResourceDevices
from akri.sim.kubelet.manager import DeviceManager
from akri.sim.kubelet.model import AdmittedPod, Assignment

_NO_TOPOLOGY = -1


def pod_resources(pod: AdmittedPod) -> PodResources:
    spec = pod.spec
    listed = [c for c in spec.init_containers if c.restartable] + list(spec.containers)
    return PodResources(
        name=spec.name,
        namespace=spec.namespace,
        containers=[
            ContainerResources(
                name=container.name,
                devices=_container_devices(pod.allocations.get(container.name, {})),
            )
            for container in listed
        ],
    )


def allocatable_devices(tables: Mapping[str, ResourceDevices]) -> list[ContainerDevices]:
    """One entry per healthy device and NUMA node; unhealthy devices are not allocatable."""
    return [
        ContainerDevices(resource_name=resource, device_ids=[device_id], topology=topology)
        for resource, table in sorted(tables.items())
        for device_id in sorted(table.healthy_ids)
        for topology in _topologies(table.numa_nodes(device_id))
    ]


def _container_devices(held: Mapping[str, Assignment]) -> list[ContainerDevices]:
    result = []
    for resource, assignment in sorted(held.items()):
        by_node: dict[int, list[str]] = {}
        for device_id in assignment.ids:
            for node in assignment.numa_nodes.get(device_id) or (_NO_TOPOLOGY,):
                by_node.setdefault(node, []).append(device_id)
        for node, ids in sorted(by_node.items()):
            topology = None if node == _NO_TOPOLOGY else _topology(node)
            result.append(
                ContainerDevices(resource_name=resource, device_ids=ids, topology=topology)
            )
    return result


def _topologies(nodes: Iterable[int]) -> list[TopologyInfo | None]:
    return [_topology(node) for node in nodes] or [None]


def _topology(node: int) -> TopologyInfo:
    return TopologyInfo(nodes=[NUMANode(ID=node)])


class PodResourcesLister(PodResourcesListerServicer):
    """Reads the device manager's live state on every call."""

    def __init__(self, manager: DeviceManager) -> None:
        self._manager = manager

    async def List(
        self, request: ListPodResourcesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> ListPodResourcesResponse:
        pods = self._manager.pods.values()
        return ListPodResourcesResponse(pod_resources=[pod_resources(pod) for pod in pods])

    async def Get(
        self, request: GetPodResourcesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> GetPodResourcesResponse:
        wanted = (request.pod_name, request.pod_namespace)
        pods = self._manager.pods.values()
        pod = next((p for p in pods if (p.spec.name, p.spec.namespace) == wanted), None)
        if pod is None:
            await context.abort(
                grpc.StatusCode.UNKNOWN,
                f"pod {request.pod_name} in namespace {request.pod_namespace} not found",
            )
        return GetPodResourcesResponse(pod_resources=pod_resources(pod))

    async def GetAllocatableResources(
        self, request: AllocatableResourcesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AllocatableResourcesResponse:
        tables = self._manager.device_tables()
        return AllocatableResourcesResponse(devices=allocatable_devices(tables))
