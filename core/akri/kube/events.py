"""Kubernetes Events: how every akri-py component tells an operator what it did and why.

`kubectl describe` shows them under the object they concern. Recording never raises: an event
that cannot be written is logged and dropped, it must not fail the work it describes.
"""

from __future__ import annotations

import logging
import secrets
from datetime import UTC, datetime
from typing import Any, Literal

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.kube.calls import describe

log = logging.getLogger(__name__)


async def record_event(
    api: client.CoreV1Api,
    involved: dict[str, Any],
    reason: str,
    message: str,
    *,
    component: str,
    kind: Literal["Normal", "Warning"] = "Normal",
) -> None:
    """Write a core/v1 Event about `involved` (an object dict with apiVersion, kind, metadata)."""
    metadata = involved["metadata"]
    namespace = metadata.get("namespace") or "default"
    now = datetime.now(UTC)
    body = client.CoreV1Event(
        metadata=client.V1ObjectMeta(
            name=f"{metadata['name']}.{secrets.token_hex(8)}", namespace=namespace
        ),
        involved_object=client.V1ObjectReference(
            api_version=involved.get("apiVersion"),
            kind=involved.get("kind"),
            name=metadata["name"],
            namespace=metadata.get("namespace"),
            uid=metadata.get("uid"),
            resource_version=metadata.get("resourceVersion"),
        ),
        reason=reason,
        message=message,
        type=kind,
        source=client.V1EventSource(component=component),
        reporting_component=component,
        first_timestamp=now,
        last_timestamp=now,
        count=1,
    )
    try:
        await api.create_namespaced_event(namespace, body)
    except (ApiException, OSError) as error:
        log.warning(
            "could not record event %s on %s: %s", reason, metadata["name"], describe(error)
        )
