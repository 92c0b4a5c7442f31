"""The instance-level plugin `akri.sh/<instance>`: one virtual device per slot.

Rules: docs/design.md §5.2.
"""

from __future__ import annotations

from collections.abc import Sequence

from akri import slots
from akri.agent.instances import Topic, instance_topic
from akri.agent.plugins.servicer import PluginServicer
from akri.api import Instance
from akri.api.pool import view, with_usage
from akri.naming import slot_index
from akri.proto.deviceplugin.v1beta1.api_pb2 import AllocateResponse
from akri.slot_sync import SlotRef


class InstancePlugin(PluginServicer):
    def topic(self) -> Topic:
        return instance_topic(self.spec.namespace, self.spec.name)

    def devices(self) -> dict[str, bool]:
        instance = self.env.cache.get(self.spec.namespace, self.spec.name)
        return {} if instance is None else slots.il_health(view(instance), self.env.node)

    async def allocate(self, containers: Sequence[Sequence[str]]) -> AllocateResponse:
        """Claim exactly the requested slots in one guarded write; a conflict decides again."""
        requested = [slot for ids in containers for slot in ids]
        node, name = self.env.node, self.spec.name

        def claim(fresh: Instance) -> Instance | None:
            return with_usage(fresh, slots.allocate_il(view(fresh), node, requested).usage)

        async with self.env.allocations.lock:
            stored = await self.env.cache.update(self.spec.namespace, name, claim)
            if stored is None:
                raise slots.AllocationError(f"Instance {self.spec.namespace}/{name} is gone")
            self.env.allocations.granted(slots.Holding(self.spec.resource, s) for s in requested)
            self.env.allocations.bound(
                {
                    slots.Holding(self.spec.resource, s): SlotRef(name, index)
                    for s in requested
                    if (index := slot_index(name, s)) is not None
                }
            )
        granted = [[name] * len(ids) for ids in containers]
        return self.respond(granted, {name: stored}, stored.spec.configuration_name)
