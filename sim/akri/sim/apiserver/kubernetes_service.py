"""The `default/kubernetes` Service and its Endpoints and EndpointSlice, which the API server
keeps itself.

As kube-apiserver does: once it serves, it creates the Service at the first address of the
service range, with one port `https` (443/TCP) leading to its secure port, and Endpoints and an
EndpointSlice `kubernetes` listing the address and port it serves pods on. It creates each again
when deleted and puts the Endpoints and the slice back when changed (kube-apiserver checks every
10 s; here the change itself wakes the check, and `default` cannot be deleted, as there). A
Service that exists is left as it is: since Kubernetes 1.17 a changed port or type is not reset.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from akri.sim.apiserver.core_kinds import SERVICE_CIDR
from akri.sim.apiserver.operations import Operations
from akri.sim.apiserver.resources import ResourceType
from akri.sim.apiserver.store import Key, identity
from akri.sim.apiserver.watchcache import DELETED, WatchEvent

JSON = dict[str, Any]

NAMESPACE: Final = "default"
NAME: Final = "kubernetes"
SERVICE_IP: Final = str(next(SERVICE_CIDR.hosts()))
"""Where pods find the API server: the first address of the service range (10.96.0.1)."""
SERVICE_PORT: Final = 443
_SERVICES: Final[Key] = ("", "services")
_ENDPOINTS: Final[Key] = ("", "endpoints")
_SLICES: Final[Key] = ("discovery.k8s.io", "endpointslices")
_PORT_NAME: Final = "https"


def service(target_port: int) -> JSON:
    """The Service as kube-apiserver creates it, leading to `target_port` (its secure port)."""
    port = {"name": _PORT_NAME, "port": SERVICE_PORT, "protocol": "TCP", "targetPort": target_port}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata({"component": "apiserver", "provider": "kubernetes"}),
        "spec": {
            "type": "ClusterIP",
            "clusterIP": SERVICE_IP,
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "ports": [port],
        },
    }


def endpoints(address: str, port: int) -> JSON:
    """The Endpoints: the API server itself (not mirrored into a slice: it writes its own)."""
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": _metadata({"endpointslice.kubernetes.io/skip-mirror": "true"}),
        "subsets": [{"addresses": [{"ip": address}], "ports": [_endpoint_port(port)]}],
    }


def endpoint_slice(address: str, port: int) -> JSON:
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _metadata({"kubernetes.io/service-name": NAME}),
        "addressType": "IPv6" if ":" in address else "IPv4",
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [_endpoint_port(port)],
    }


def _metadata(labels: dict[str, str]) -> JSON:
    return {"name": NAME, "namespace": NAMESPACE, "labels": labels}


def _endpoint_port(port: int) -> JSON:
    return {"name": _PORT_NAME, "port": port, "protocol": "TCP"}


def _content(obj: JSON) -> JSON:
    """What the API server puts back: everything but metadata other than the labels."""
    kept = {
        key: value for key, value in obj.items() if key not in ("metadata", "apiVersion", "kind")
    }
    return {**kept, "labels": obj["metadata"].get("labels") or {}}


class KubernetesService:
    """Keeps the three objects: on `ensure`, and from `run` whenever one of them changes."""

    def __init__(self, operations: Operations) -> None:
        self._operations = operations
        self._changed = asyncio.Event()
        operations.store.listeners.append(self._notice)

    def _notice(self, key: Key, event: WatchEvent) -> None:
        """Told of every change in the store: the kind is compared first, as it is cheap."""
        kept = key in (_ENDPOINTS, _SLICES) or (key == _SERVICES and event.type == DELETED)
        if kept and identity(event.obj) == (NAMESPACE, NAME):
            self._changed.set()

    def ensure(self, address: str, port: int) -> None:
        """Create what is missing and put back the Endpoints and slice of `address`:`port`."""
        store, kind = self._operations.store, self._operations.kind
        if store.peek(_SERVICES, NAMESPACE, NAME) is None:
            self._write(kind("", "v1", "services"), service(port), None)
        for resource, desired in (
            (kind("", "v1", "endpoints"), endpoints(address, port)),
            (kind("discovery.k8s.io", "v1", "endpointslices"), endpoint_slice(address, port)),
        ):
            current = store.peek(resource.key, NAMESPACE, NAME)
            if current is None or _content(current) != _content(desired):
                self._write(resource, desired, current)

    def _write(self, resource: ResourceType, desired: JSON, current: JSON | None) -> None:
        if current is None:
            self._operations.create(resource, NAMESPACE, desired)
            return
        meta = {**current["metadata"], "labels": desired["metadata"]["labels"]}
        self._operations.update(resource, NAMESPACE, NAME, {**desired, "metadata": meta})

    async def run(self, address: str, port: int) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            self.ensure(address, port)
