"""Shared helpers of the conformance suite: the test CRD, polling with a deadline, clients."""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from akri.sim.apiserver import ApiServer

FOREIGN_KUBECONFIG = os.environ.get("AKRI_CONFORMANCE_KUBECONFIG")
DEADLINE_S = 30.0  # generous: only a hang should reach it, on a loaded machine too
GROUP = "conformance.akri.sh"
VERSION = "v1"
PLURAL = "widgets"
# Pods a test schedules itself (or never) name a scheduler nobody runs, so that a real
# cluster's scheduler and kubelets leave them alone.
NO_SCHEDULER = "akri-conformance-no-scheduler"
# A real garbage collector works asynchronously, often seconds behind: wait as its clients do.
COLLECTION_DEADLINE_S = 60.0
T = TypeVar("T")

WIDGET_CRD: Any = {  # a dict: the client sends it as is
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{PLURAL}.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "plural": PLURAL,
            "singular": "widget",
            "kind": "Widget",
            "shortNames": ["wdg"],
            "categories": ["all"],
        },
        "versions": [
            {
                "name": VERSION,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    {"name": "Capacity", "type": "integer", "jsonPath": ".spec.capacity"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["color"],
                                "properties": {
                                    "color": {"type": "string", "enum": ["red", "blue"]},
                                    "capacity": {"type": "integer", "minimum": 1, "default": 1},
                                    "label": {"type": "string", "pattern": "^[a-z]+$"},
                                    "nodes": {"type": "array", "items": {"type": "string"}},
                                    "extra": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {
                                "type": "object",
                                "properties": {
                                    "ready": {"type": "boolean"},
                                    "count": {"type": "integer"},
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


GIZMO_CRD: Any = {  # one kind served in two versions (no conversion: apiVersion differs only)
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gizmos.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        "versions": [
            {"name": name, "served": True, "storage": name == "v1", "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}
            for name in ("v1", "v2")
        ],
    },
}  # fmt: skip


def rules(*pairs: tuple[str, str | None]) -> list[dict[str, str]]:
    return [{"rule": r, **({"message": m} if m else {})} for r, m in pairs]


# Validation rules (CEL) of each kind: a rule with a message, a transition rule, one without
# a message, one on array items.
GADGET_CRD: Any = {  # a dict: the client sends it as is
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"gadgets.{GROUP}"},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                "type": "object",
                "x-kubernetes-validations": rules(("self.min <= self.max",
                                                   "min must not exceed max")),
                "properties": {
                    "min": {"type": "integer"},
                    "max": {"type": "integer"},
                    "mode": {"type": "string", "x-kubernetes-validations": rules(
                        ("self == oldSelf", "mode is immutable"))},
                    "code": {"type": "string",
                             "x-kubernetes-validations": rules(("self.size() <= 3", None))},
                    "ports": {"type": "array", "items": {
                        "type": "integer",
                        "x-kubernetes-validations": rules(("self > 0", "ports are positive"))}},
                },
            }}}},
        }],
    },
}  # fmt: skip


def gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name},
            "spec": {"min": 1, "max": 2, "mode": "a", **spec}}  # fmt: skip


@dataclass
class Cluster:
    kubeconfig: Path
    server: ApiServer | None  # None when running against a foreign server

    @property
    def emulator(self) -> ApiServer:
        assert self.server is not None, "this test needs the emulator"
        return self.server


async def new_client(cluster: Cluster) -> client.ApiClient:
    return await config.new_client_from_config(
        config_file=str(cluster.kubeconfig), persist_config=False
    )


async def gone(read: Callable[[], Awaitable[Any]]) -> bool:
    try:
        await read()
    except ApiException as error:
        if error.status == 404:
            return True
        raise
    return False


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"color": "red", **spec},
    }


async def raw_get(
    api: client.ApiClient, path: str, query: dict[str, str], accept: str = "application/json"
) -> Any:
    """A GET through the client's own session and credentials, answered unparsed.

    The result is an aiohttp response: read it, then `release()` it.
    """
    return await api.call_api(
        path,
        "GET",
        query_params=list(query.items()),
        header_params={"Accept": accept},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )


# kubernetes-asyncio's stubs omit `_content_type`; it still takes it at run time.
MERGE_PATCH: dict[str, Any] = {"_content_type": "application/merge-patch+json"}
STRATEGIC_PATCH: dict[str, Any] = {"_content_type": "application/strategic-merge-patch+json"}


def status_body(error: ApiException) -> dict[str, Any]:
    """The `Status` object an API error carries."""
    body: dict[str, Any] = json.loads(error.body or b"{}")
    return body
