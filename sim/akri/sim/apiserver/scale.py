"""The `scale` subresource (`autoscaling/v1` Scale) of Deployments and ReplicaSets.

`kubectl scale` reads and patches it; the server maps it onto `spec.replicas` of the object.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver import errors, patching
from akri.sim.apiserver.resources import ResourceType

JSON = dict[str, Any]


def of(obj: JSON) -> JSON:
    """The Scale view of a workload."""
    meta = obj["metadata"]
    selector = ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": (obj.get("spec") or {}).get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in selector.items()),
        },
    }


def patched(current: JSON, content_type: str, body: Any) -> Any:
    """The Scale a PATCH asks for (a Scale has no lists: strategic merge is a merge)."""
    if content_type == patching.JSON_PATCH:
        return patching.json_patch(of(current), body)
    return patching.merge_patch(of(current), body)


def applied(resource: ResourceType, current: JSON, scale: Any) -> JSON:
    """`current` with the replicas the Scale asks for; a stale resourceVersion is a 409."""
    name = current["metadata"]["name"]
    replicas = (
        ((scale or {}).get("spec") or {}).get("replicas") if isinstance(scale, dict) else None
    )
    if not isinstance(replicas, int) or replicas < 0:
        raise errors.invalid(
            "autoscaling",
            "Scale",
            name,
            [("spec.replicas", f"Invalid value: {replicas!r}: must be greater than or equal to 0")],
        )
    given = (scale.get("metadata") or {}).get("resourceVersion")
    if given and given != current["metadata"]["resourceVersion"]:
        raise errors.stale_write(resource.group, resource.plural, name)
    return {**current, "spec": {**(current.get("spec") or {}), "replicas": replicas}}
