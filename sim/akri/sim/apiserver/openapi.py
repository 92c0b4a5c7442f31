"""OpenAPI v3 discovery: what kubectl needs to choose server-side field validation and to
explain kinds.

kubectl looks for a PATCH operation of the object's kind carrying a `fieldValidation`
parameter; when it finds one it sends `fieldValidation=Strict` and leaves validation to the
server. Without these documents `kubectl apply` fails before sending anything. Each kind's
schema (`openapi_schemas`) is what `kubectl explain` shows.
"""

from __future__ import annotations

import hashlib
from typing import Any

from akri.sim.apiserver.openapi_schemas import component_schemas
from akri.sim.apiserver.resources import Registry, ResourceType

JSON = dict[str, Any]


def _path_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _fingerprint(kinds: list[ResourceType]) -> str:
    """Changes whenever the kinds of a group version change, so clients refresh their cache."""
    text = ",".join(sorted(f"{k.kind}:{k.plural}:{k.namespaced}" for k in kinds))
    return hashlib.sha256(text.encode()).hexdigest()[:16].upper()


def root(registry: Registry) -> JSON:
    paths: JSON = {}
    for group in registry.groups():
        for version in registry.versions(group):
            key = _path_key(group, version)
            fingerprint = _fingerprint(registry.in_group_version(group, version))
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={fingerprint}"}
    return {"paths": paths}


def _object_path(kind: ResourceType) -> str:
    base = f"/{_path_key(kind.group, kind.version)}"
    scope = "/namespaces/{namespace}" if kind.namespaced else ""
    return f"{base}{scope}/{kind.plural}/{{name}}"


def group_version(registry: Registry, group: str, version: str) -> JSON | None:
    kinds = registry.in_group_version(group, version)
    if not kinds:
        return None
    paths = {
        _object_path(kind): {
            "patch": {
                "operationId": f"patch{kind.kind}",
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {
                    "group": kind.group,
                    "version": kind.version,
                    "kind": kind.kind,
                },
            }
        }
        for kind in kinds
    }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.32.0-akri-sim"},
        "paths": paths,
        "components": {"schemas": component_schemas(kinds)},
    }
