"""The `default/kubernetes` Service, which the API server keeps itself.

As kube-apiserver does: once it serves, it creates the Service at the first address of the
service range, with one port `https` (443/TCP) leading to its secure port, and creates it again
when it is deleted (kube-apiserver checks every 10 s; here the deletion itself wakes the check,
and `default` cannot be deleted, as there). A Service that exists is left as it is: since
Kubernetes 1.17 a changed port or type is not reset. The Service's Endpoints and EndpointSlice
are not emulated (nor are those kinds).
"""

from __future__ import annotations

import asyncio
from typing import Any, Final

from akri.sim.apiserver.core_kinds import SERVICE_CIDR
from akri.sim.apiserver.operations import Operations
from akri.sim.apiserver.store import Key, identity
from akri.sim.apiserver.watchcache import DELETED, WatchEvent

NAMESPACE: Final = "default"
NAME: Final = "kubernetes"
SERVICE_IP: Final = str(next(SERVICE_CIDR.hosts()))
"""Where pods find the API server: the first address of the service range (10.96.0.1)."""
SERVICE_PORT: Final = 443
_SERVICES: Final[Key] = ("", "services")


def service(target_port: int) -> dict[str, Any]:
    """The Service as kube-apiserver creates it, leading to `target_port` (its secure port)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "type": "ClusterIP",
            "clusterIP": SERVICE_IP,
            "ipFamilyPolicy": "SingleStack",
            "sessionAffinity": "None",
            "ports": [
                {
                    "name": "https",
                    "port": SERVICE_PORT,
                    "protocol": "TCP",
                    "targetPort": target_port,
                }
            ],
        },
    }


class KubernetesService:
    """Creates the Service when it is missing: on `ensure`, and from `run` whenever it is
    deleted."""

    def __init__(self, operations: Operations) -> None:
        self._operations = operations
        self._deleted = asyncio.Event()
        operations.store.listeners.append(self._notice)

    def _notice(self, key: Key, event: WatchEvent) -> None:
        if key == _SERVICES and event.type == DELETED and identity(event.obj) == (NAMESPACE, NAME):
            self._deleted.set()

    def ensure(self, target_port: int) -> None:
        """Create the Service unless it exists."""
        if self._operations.store.peek(_SERVICES, NAMESPACE, NAME) is None:
            services = self._operations.kind("", "v1", "services")
            self._operations.create(services, NAMESPACE, service(target_port))

    async def run(self, target_port: int) -> None:
        while True:
            await self._deleted.wait()
            self._deleted.clear()
            self.ensure(target_port)
