"""Discovery documents: /version, /api, /apis and the per-version resource lists.

Pure logic over the registry. kubectl maps kinds and short names to URLs from these (it falls
back from aggregated discovery to these legacy documents), so CRDs appear as soon as they are
registered.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.resources import STANDARD_VERBS, Registry, ResourceType
from akri.sim.version import KUBERNETES_VERSION

JSON = dict[str, Any]

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": KUBERNETES_VERSION,
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.23",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "binding": ["create"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "token": ["create"],
}
_SUBRESOURCE_KINDS = {
    "binding": {"kind": "Binding"},
    "scale": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
    "token": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
}


def api_versions(address: str) -> JSON:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group(registry: Registry, group: str) -> JSON:
    versions = [{"groupVersion": f"{group}/{v}", "version": v} for v in registry.versions(group)]
    preferred = registry.preferred_version(group)
    return {
        "name": group,
        "versions": versions,
        "preferredVersion": {"groupVersion": f"{group}/{preferred}", "version": preferred},
    }


def api_group_list(registry: Registry) -> JSON:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group(registry, group) for group in registry.groups() if group],
    }


def api_group(registry: Registry, group: str) -> JSON | None:
    if group not in registry.groups() or not group:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(registry, group)}


def _entries(resource: ResourceType) -> list[JSON]:
    main: JSON = {
        "name": resource.plural,
        "singularName": resource.singular,
        "namespaced": resource.namespaced,
        "kind": resource.kind,
        "verbs": list(STANDARD_VERBS),
    }
    if resource.short_names:
        main["shortNames"] = list(resource.short_names)
    if resource.categories:
        main["categories"] = list(resource.categories)
    subresources = [
        {
            "name": f"{resource.plural}/{sub}",
            "singularName": "",
            "namespaced": resource.namespaced,
            "kind": resource.kind,
            **_SUBRESOURCE_KINDS.get(sub, {}),
            "verbs": _SUBRESOURCE_VERBS[sub],
        }
        for sub in sorted(resource.subresources)
    ]
    return [main, *subresources]


def api_resource_list(registry: Registry, group: str, version: str) -> JSON | None:
    kinds = registry.in_group_version(group, version)
    if not kinds:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": [entry for kind in kinds for entry in _entries(kind)],
    }
