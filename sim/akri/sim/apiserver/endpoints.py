"""Where a Service's port leads: a ready pod's IP and the port its targetPort names (pure, but
for the random pick among ready pods).

What the endpoints controller and kube-proxy together give a client of the Service, for the API
server's own calls to Services (webhooks).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from akri.sim.apiserver.apps_kinds import selector_labels

JSON = Mapping[str, Any]


def _ready(pod: JSON) -> bool:
    status = pod.get("status") or {}
    conditions = status.get("conditions") or []
    return (
        bool(status.get("podIP"))
        and not (pod.get("metadata") or {}).get("deletionTimestamp")
        and any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    )


def _container_port(pod: JSON, target: int | str) -> int | None:
    """A numeric targetPort as it is; a named one from the pod's container ports."""
    if isinstance(target, int) or str(target).isdigit():
        return int(target)
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name") == target:
                return int(port["containerPort"])
    return None


def endpoint(
    service: JSON,
    pods: Iterable[JSON],
    port: int,
    pick: Callable[[Sequence[tuple[str, int]]], tuple[str, int]] = random.choice,
) -> tuple[str, int]:
    """One of the ready pods the Service's `port` reaches, as (pod IP, port), `pick`ed at
    random for each call as kube-proxy spreads connections: a call never keeps meeting the
    same replica.

    Raises LookupError in the API server's words when the Service has no such port or no
    ready pod behind it."""
    name = (service.get("metadata") or {}).get("name", "")
    spec = service.get("spec") or {}
    ports = [p for p in spec.get("ports") or [] if p.get("port") == port]
    if not ports:
        raise LookupError(f'service "{name}" has no port {port}')
    target = ports[0].get("targetPort", port)
    selector = spec.get("selector") or {}
    chosen = selector_labels({"matchLabels": selector}) if selector else None
    ready = []
    for pod in sorted(pods, key=lambda p: str((p.get("metadata") or {}).get("name", ""))):
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if chosen is None or not chosen.matches(labels) or not _ready(pod):
            continue
        number = _container_port(pod, target)
        if number is not None:
            ready.append((str(pod["status"]["podIP"]), number))
    if not ready:
        raise LookupError(f'no endpoints available for service "{name}"')
    return pick(ready)
