"""Apply YAML manifests the way `kubectl create -f` would: any kind the API server serves; and
the manifests the simulated cluster's users write most (a debugEcho Configuration, a pod
asking for akri resources)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.dynamic import DynamicClient

from akri import naming


def load_documents(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every non-empty YAML document of `paths`, in order; a document without kind is an error."""
    documents = []
    for path in paths:
        for document in yaml.safe_load_all(path.read_text()):
            if not document:
                continue
            if not isinstance(document, dict) or "kind" not in document:
                raise ValueError(f"{path}: every document needs apiVersion and kind")
            documents.append(document)
    return documents


async def apply_documents(
    api_client: client.ApiClient, documents: Iterable[dict[str, Any]]
) -> list[str]:
    """Create each document (discovering its resource); returns `kind/name` for each."""
    dynamic = await DynamicClient(api_client)
    created = []
    for document in documents:
        resource = await dynamic.resources.get(
            api_version=document["apiVersion"], kind=document["kind"]
        )
        namespace = (
            document["metadata"].get("namespace", "default") if resource.namespaced else None
        )
        await dynamic.create(resource, body=document, namespace=namespace)
        created.append(f"{document['kind'].lower()}/{document['metadata']['name']}")
    return created


def debug_echo_configuration(
    name: str,
    descriptions: Iterable[str],
    capacity: int,
    *,
    namespace: str = "default",
    **spec: Any,
) -> dict[str, Any]:
    """A debugEcho Configuration discovering one device per description; `spec` adds fields
    (e.g. uniqueDevices=False)."""
    details = f"descriptions: [{', '.join(descriptions)}]"
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "discoveryHandler": {"name": "debugEcho", "discoveryDetails": details},
            "capacity": capacity,
            **spec,
        },
    }


def pod(name: str, node: str, resource: str, count: int, *, init: bool = False) -> dict[str, Any]:
    """A pod pinned to `node` whose container (and init container) asks for `count` of
    `akri.sh/<resource>`."""

    def container(container_name: str) -> dict[str, Any]:
        limits = {naming.resource_name(resource): str(count)}
        return {"name": container_name, "image": "busybox", "resources": {"limits": limits}}

    spec: dict[str, Any] = {
        "containers": [container("app")],
        "nodeSelector": {"kubernetes.io/hostname": node},
    }
    if init:
        spec["initContainers"] = [container("init")]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}
