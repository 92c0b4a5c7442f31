"""Write this agent's view of a Configuration into its status, and an Event per new problem.

Status writes are guarded read-modify-writes of the status subresource that touch only the
conditions (see `conditions` for why agents never fight over them); Events are recorded once
per distinct problem, so a problem that persists does not flood `kubectl describe`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.agent.conditions import updated_conditions
from akri.agent.discovery.model import Status
from akri.api import Configuration, ConfigurationStatus
from akri.kube.events import record_event
from akri.kube.guarded import CustomResource, GuardedWriter

log = logging.getLogger(__name__)

CONFIGURATIONS = CustomResource(naming.GROUP, naming.VERSION, Configuration.plural)
COMPONENT = "akri-agent"


class StatusReporter:
    """Reports views of one Configuration; keeps which problems it already told as Events."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._writer = GuardedWriter(api_client, CONFIGURATIONS)
        self._api_client = api_client
        self._told: set[tuple[str, str]] = set()

    async def report(self, configuration: Mapping[str, Any], view: Status) -> None:
        """Assert `view` in the status of `configuration` (as stored: it may not even parse);
        record an Event when it is a problem not told yet.

        Raises the API's errors (the caller retries); a Configuration gone meanwhile is fine.
        """
        metadata = configuration["metadata"]
        namespace, name = metadata.get("namespace") or "default", metadata.get("name") or ""
        uid = metadata.get("uid")

        def mutate(obj: dict[str, Any]) -> dict[str, Any] | None:
            if obj["metadata"].get("uid") != uid:
                return None  # deleted and created again: the new object gets its own report
            stored = obj.get("status") or {}
            status = ConfigurationStatus.model_validate(stored)
            conditions = updated_conditions(
                status.conditions, view, obj["metadata"].get("generation"), datetime.now(UTC)
            )
            if conditions is None:
                return None
            # Only the conditions change: counts belong to the controller, left as they are.
            wire = [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in conditions]
            obj["status"] = {**stored, "conditions": wire}
            return obj

        await self._writer.update(namespace, name, mutate, subresource="status")
        if view.ok:
            self._told.clear()  # a problem coming back later is news again
            return
        problem = (view.condition.value, view.message)
        if problem not in self._told:
            self._told.add(problem)
            await record_event(
                client.CoreV1Api(self._api_client),  # made when needed, see kube_reader
                dict(configuration),
                view.condition.value,
                view.message,
                component=COMPONENT,
                kind="Warning",
            )
