"""Write this node's problems with an Instance into its status, and an Event per new problem.

The write is a guarded read-modify-write of the status subresource through the Instance cache
that touches only this node's row and the conditions computed from all rows (see
`conditions.updated_status`); an Instance gone meanwhile is fine. Events are recorded
once per distinct problem, so a problem that persists does not flood `kubectl describe`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Literal

from kubernetes_asyncio import client

from akri import naming
from akri.agent.conditions import updated_status
from akri.agent.instances import InstanceCache
from akri.agent.status import COMPONENT
from akri.api import Instance, InstanceStatus
from akri.kube.events import record_event
from akri.node_reports import node_prefix

Key = tuple[str, str]


class InstanceReporter:
    """Reports one node's problems on Instances; keeps which it already told as Events."""

    def __init__(self, cache: InstanceCache, node: str) -> None:
        self._cache = cache
        self._node = node
        self._core: client.CoreV1Api | None = None
        self._told: set[tuple[Key, str, str]] = set()  # (Instance, type, message)

    async def report(self, key: Key, types: Collection[str], problems: Mapping[str, str]) -> None:
        """Set this node's problems of `types` on the Instance `key` to `problems` (type to
        message); a Warning Event for each problem not told yet. Raises the API's errors."""
        now = datetime.now(UTC)

        def mutate(instance: Instance) -> InstanceStatus | None:
            return updated_status(
                instance.status or InstanceStatus(),
                self._node,
                types,
                problems,
                instance.metadata.generation,
                now,
            )

        await self._cache.update_status(*key, mutate)
        told = {(t, m) for k, t, m in self._told if k == key and t in types}
        self._told -= {(key, t, m) for t, m in told}
        self._told |= {(key, t, m) for t, m in problems.items()}
        for type, message in sorted(problems.items()):
            if (type, message) not in told:
                await self.event(key, type, message, "Warning")

    async def event(
        self, key: Key, reason: str, message: str, kind: Literal["Normal", "Warning"]
    ) -> None:
        """An Event on the Instance `key` about this node (never raises)."""
        if self._core is None:
            self._core = client.CoreV1Api(self._cache.api_client)  # 3 MB: only when needed
        found = self._cache.get(*key)
        metadata = {"namespace": key[0], "name": key[1]}
        if found is not None and found.metadata.uid:
            metadata["uid"] = found.metadata.uid
        involved = {"apiVersion": naming.API_VERSION, "kind": "Instance", "metadata": metadata}
        await record_event(
            self._core,
            involved,
            reason,
            node_prefix(self._node) + message,
            component=COMPONENT,
            kind=kind,
        )
