"""Write this node's row of a Configuration's status, and an Event per new problem.

Status writes are guarded read-modify-writes of the status subresource that touch only this
node's row and the conditions computed from all rows (see `conditions`); counts belong to the
controller and are left as they are. Events are recorded once per distinct problem, so a
problem that persists does not flood `kubectl describe`.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.agent.conditions import updated_status
from akri.api import Configuration, ConfigurationStatus
from akri.kube.events import record_event
from akri.kube.guarded import CustomResource, GuardedWriter
from akri.node_reports import node_prefix

log = logging.getLogger(__name__)

CONFIGURATIONS = CustomResource(naming.GROUP, naming.VERSION, Configuration.plural)
COMPONENT = "akri-agent"


class StatusReporter:
    """Reports one node's problems on Configurations; keeps which it already told as Events."""

    def __init__(self, api_client: client.ApiClient, node: str) -> None:
        self._writer = GuardedWriter(api_client, CONFIGURATIONS)
        self._api_client = api_client
        self._node = node
        self._told: set[tuple[str, str, str]] = set()  # (uid, type, message)

    async def report(
        self,
        configuration: Mapping[str, Any],
        types: Collection[str],
        problems: Mapping[str, str],
    ) -> None:
        """Set this node's problems of `types` to `problems` (type to message) in the status of
        `configuration` (as stored: it may not even parse); record an Event for each problem not
        told yet.

        Raises the API's errors (the caller retries); a Configuration gone meanwhile is fine.
        """
        metadata = configuration["metadata"]
        namespace, name = metadata.get("namespace") or "default", metadata.get("name") or ""
        uid = metadata.get("uid") or ""

        def mutate(obj: dict[str, Any]) -> dict[str, Any] | None:
            if obj["metadata"].get("uid") != uid:
                return None  # deleted and created again: the new object gets its own report
            stored = obj.get("status") or {}
            status = updated_status(
                ConfigurationStatus.model_validate(stored),
                self._node,
                types,
                problems,
                obj["metadata"].get("generation"),
                datetime.now(UTC),
            )
            if status is None:
                return None
            wire = status.model_dump(mode="json", by_alias=True, exclude_none=True)
            obj["status"] = {**stored, "conditions": wire["conditions"], "nodes": wire["nodes"]}
            return obj

        await self._writer.update(namespace, name, mutate, subresource="status")
        # What was told of these types is replaced: a problem resolved and coming back later
        # is news again.
        told = {(t, m) for u, t, m in self._told if u == uid and t in types}
        self._told -= {(uid, t, m) for t, m in told}
        self._told |= {(uid, t, m) for t, m in problems.items()}
        for type, message in sorted(problems.items()):
            if (type, message) not in told:
                await record_event(
                    client.CoreV1Api(self._api_client),  # made when needed, see kube_reader
                    dict(configuration),
                    type,
                    node_prefix(self._node) + message,
                    component=COMPONENT,
                    kind="Warning",
                )
