"""What a test reads and writes on the rig, as a user with kubectl would: Configurations, pods
asking for Akri's resources, and the real objects that record who holds what (Instances'
deviceUsage, ResourceClaims' allocations, node allocatable, pod phases and conditions), plus
the kubelet's own PodResources answer over its unix socket.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from pathlib import Path
from typing import Any

import grpc
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.proto.podresources.v1.api_pb2 import ListPodResourcesRequest
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerStub

JSON = dict[str, Any]
DRA_GROUP, DRA_VERSION = "resource.k8s.io", "v1"
HOSTNAME = "kubernetes.io/hostname"
NOT_FOUND = 404


def configuration(
    name: str,
    *,
    capacity: int = 2,
    unique: bool = True,
    descriptions: tuple[str, ...] = ("foo0", "foo1"),
    broker: bool = False,
) -> JSON:
    spec: JSON = {
        "discoveryHandler": {
            "name": "debugEcho",
            "discoveryDetails": f"descriptions: [{', '.join(descriptions)}]",
        },
        "capacity": capacity,
        "uniqueDevices": unique,
    }
    if broker:
        container = {
            "name": "broker",
            "image": "busybox",
            "resources": {"limits": {"{{PLACEHOLDER}}": "1"}},
        }
        spec["brokerSpec"] = {"brokerPodSpec": {"containers": [container]}}
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": name},
        "spec": spec,
    }


def pod(name: str, resource: str, count: int = 1, *, node: str | None = None) -> JSON:
    """A pod whose one container asks `resource: count` (scheduled anywhere, or on `node`)."""
    limits = {naming.resource_name(resource): str(count)}
    spec: JSON = {
        "containers": [{"name": "app", "image": "busybox", "resources": {"limits": limits}}],
        "terminationGracePeriodSeconds": 0,
    }
    if node is not None:
        spec["nodeSelector"] = {HOSTNAME: node}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def held(instance: JSON) -> dict[str, str]:
    """An Instance's held slots: slot id -> holder (`<node>` or `C:<vdev>:<node>`)."""
    usage: dict[str, str] = instance["spec"].get("deviceUsage") or {}
    return {slot: holder for slot, holder in usage.items() if holder}


def holder_node(holder: str) -> str:
    return holder.rsplit(":", 1)[-1]


class Kube:
    """One namespace of the rig, through kubernetes-asyncio."""

    def __init__(self, api_client: client.ApiClient, namespace: str) -> None:
        self.namespace = namespace
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)

    async def apply_configuration(self, body: JSON) -> None:
        await self.custom.create_namespaced_custom_object(
            naming.GROUP, naming.VERSION, self.namespace, "configurations", body
        )

    async def delete_configuration(self, name: str) -> None:
        with contextlib.suppress(ApiException):
            await self.custom.delete_namespaced_custom_object(
                naming.GROUP, naming.VERSION, self.namespace, "configurations", name
            )

    async def instances(self) -> list[JSON]:
        listed = await self.custom.list_namespaced_custom_object(
            naming.GROUP, naming.VERSION, self.namespace, "instances"
        )
        return list(listed["items"])

    async def instance_nodes(self) -> dict[str, list[str]]:
        """Each Instance's name -> its sorted nodes."""
        return {i["metadata"]["name"]: sorted(i["spec"]["nodes"]) for i in await self.instances()}

    async def holders(self) -> dict[str, str]:
        """Every held slot of every Instance: slot id -> holder."""
        return {slot: who for i in await self.instances() for slot, who in held(i).items()}

    async def create_pod(self, body: Any) -> None:  # a dict: the client sends it as is
        await self.core.create_namespaced_pod(self.namespace, body)

    async def pods(self) -> dict[str, client.V1Pod]:
        listed = await self.core.list_namespaced_pod(self.namespace)
        return {p.metadata.name: p for p in listed.items}

    async def phase(self, name: str) -> str | None:
        found = (await self.pods()).get(name)
        return None if found is None else str(found.status.phase)

    async def running(self, names: list[str]) -> bool:
        pods = await self.pods()
        return all(n in pods and pods[n].status.phase == "Running" for n in names)

    async def unschedulable(self, name: str) -> bool:
        """Whether the scheduler found no node for pod `name` (it stays Pending)."""
        found = (await self.pods()).get(name)
        if found is None or found.status.phase != "Pending" or found.spec.node_name:
            return False
        conditions = found.status.conditions or []
        return any(
            c.type == "PodScheduled" and c.status == "False" and c.reason == "Unschedulable"
            for c in conditions
        )

    async def delete_pod(self, name: str) -> None:
        with contextlib.suppress(ApiException):
            await self.core.delete_namespaced_pod(name, self.namespace, grace_period_seconds=0)

    async def gone(self, name: str) -> bool:
        return name not in await self.pods()

    async def allocatable(self, node: str, resource: str) -> int:
        """The kubelet's count of healthy devices of `akri.sh/<resource>` on `node`."""
        found = await self.core.read_node(node)
        return int((found.status.allocatable or {}).get(naming.resource_name(resource), "0"))

    async def ready(self, node: str) -> bool:
        found = await self.core.read_node(node)
        return any(c.type == "Ready" and c.status == "True" for c in found.status.conditions or [])

    async def claims(self) -> list[JSON]:
        listed = await self.custom.list_namespaced_custom_object(
            DRA_GROUP, DRA_VERSION, self.namespace, "resourceclaims"
        )
        return list(listed["items"])

    async def allocations(self) -> dict[str, list[JSON]]:
        """Each allocated claim's name -> its device results (driver, pool, device, ...)."""
        return {
            c["metadata"]["name"]: c["status"]["allocation"]["devices"]["results"]
            for c in await self.claims()
            if (c.get("status") or {}).get("allocation")
        }

    async def slices(self, configuration: str) -> list[JSON]:
        listed = await self.custom.list_cluster_custom_object(
            DRA_GROUP, DRA_VERSION, "resourceslices"
        )
        return [
            s for s in listed["items"] if s["spec"]["pool"]["name"].startswith(f"{configuration}/")
        ]


def device_uses(allocations: dict[str, list[JSON]]) -> Counter[str]:
    """How many allocations use each device (`<pool>/<device>`), over every claim."""
    return Counter(
        f"{r['pool']}/{r['device']}" for results in allocations.values() for r in results
    )


async def pod_resources(socket: Path) -> dict[str, JSON]:
    """The kubelet's PodResources List for its pods of any namespace: `<ns>/<pod>` -> the devices
    (resource -> ids) and prepared DRA claims (claim -> CDI device names) of its containers."""
    async with grpc.aio.insecure_channel(f"unix://{socket}") as channel:
        response = await PodResourcesListerStub(channel).List(ListPodResourcesRequest(), timeout=10)
    found: dict[str, JSON] = {}
    for listed in response.pod_resources:
        devices: dict[str, list[str]] = {}
        claims: dict[str, list[str]] = {}
        for container in listed.containers:
            for d in container.devices:
                devices.setdefault(d.resource_name, []).extend(d.device_ids)
            for dynamic in container.dynamic_resources:
                claims[dynamic.claim_name] = [
                    cdi.name for r in dynamic.claim_resources for cdi in r.cdi_devices
                ]
        found[f"{listed.namespace}/{listed.name}"] = {"devices": devices, "claims": claims}
    return found
