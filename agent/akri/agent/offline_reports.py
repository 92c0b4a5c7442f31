"""DeviceOffline on the Instances whose device this node misses within the offline grace.

A shared device that goes missing keeps its node in `nodes` (and its brokers) for the grace, so
nothing would show for minutes; this node's row of the Instance says so at once (an Event too),
and the row goes when the device is back (a Normal Event) or the node has left. What to report
is decided from the grace timers and the stored rows, so a failed write is retried by the next
round and a row left by an earlier run of the agent is withdrawn.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import UTC, datetime

from akri.agent.instance_reports import InstanceReporter
from akri.agent.offline import offline_message
from akri.api import Instance, InstanceConditionType

TYPE = InstanceConditionType.DEVICE_OFFLINE


def reported(instance: Instance, node: str) -> str | None:
    """The DeviceOffline message in `node`'s row of `instance`, if any (the last one: a row
    another writer garbled may hold two)."""
    messages = [
        problem.message
        for row in (instance.status.nodes if instance.status is not None else ())
        if row.node == node
        for problem in row.problems
        if problem.type == TYPE
    ]
    return messages[-1] if messages else None


class OfflineReports:
    def __init__(self, reporter: InstanceReporter, node: str, grace: float) -> None:
        self._reporter = reporter
        self._node = node
        self._grace = grace
        self._since: dict[str, datetime] = {}

    async def update(
        self,
        namespace: str,
        offline: Collection[str],
        present: Collection[str],
        instances: Iterable[Instance],
    ) -> None:
        """Report the Instances `offline` now, withdraw the others' reports (with an Event
        for those `present` again). Raises the API's errors (the next round retries)."""
        now = datetime.now(UTC)
        self._since = {name: self._since.get(name, now) for name in offline}
        stored = {
            instance.metadata.name: message
            for instance in instances
            if instance.metadata.name and (message := reported(instance, self._node)) is not None
        }
        for name in sorted(offline):
            message = offline_message(self._since[name], self._grace)
            if stored.get(name) != message:
                await self._reporter.report((namespace, name), (TYPE,), {TYPE: message})
        for name in sorted(stored.keys() - set(offline)):
            await self._reporter.report((namespace, name), (TYPE,), {})
            if name in present:
                await self._reporter.event(
                    (namespace, name), "DeviceOnline", "device back", "Normal"
                )
