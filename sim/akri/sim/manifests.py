"""Apply YAML manifests the way `kubectl create -f` would: any kind the API server serves."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.dynamic import DynamicClient


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
