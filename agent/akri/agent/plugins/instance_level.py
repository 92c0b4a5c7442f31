"""The instance-level plugin `akri.sh/<instance>`: one virtual device per slot.

Rules: docs/design.md §5.2.
"""

from __future__ import annotations

from collections.abc import Sequence

from akri import slots
from akri.agent.instances import Topic, instance_topic
from akri.agent.plugins.group_commit import Grant, Request, State
from akri.agent.plugins.servicer import Context, PluginServicer
from akri.api.pool import view
from akri.kube.reflector import Key
from akri.naming import slot_index
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateResponse,
    ContainerPreferredAllocationResponse,
    DevicePluginOptions,
    PreferredAllocationRequest,
    PreferredAllocationResponse,
)
from akri.slot_sync import SlotRef


class InstancePlugin(PluginServicer):
    options = DevicePluginOptions(pre_start_required=False, get_preferred_allocation_available=True)
    """It prefers slots of this node's own part of the range (`slots.il_preferred`)."""

    def topic(self) -> Topic:
        return instance_topic(self.spec.namespace, self.spec.name)

    def devices(self) -> dict[str, bool]:
        instance = self.env.cache.get(self.spec.namespace, self.spec.name)
        if instance is None:
            return {}
        return slots.instance_level_health(view(instance), self.env.node)

    async def GetPreferredAllocation(
        self, request: PreferredAllocationRequest, context: Context
    ) -> PreferredAllocationResponse:
        instance = self.env.cache.get(self.spec.namespace, self.spec.name)
        pool = view(instance) if instance is not None else slots.SlotPool(self.spec.name, "", 0)
        return PreferredAllocationResponse(
            container_responses=[
                ContainerPreferredAllocationResponse(
                    deviceIDs=slots.instance_level_preferred(
                        pool,
                        self.env.node,
                        wanted.available_deviceIDs,
                        wanted.must_include_deviceIDs,
                        wanted.allocation_size,
                    )
                )
                for wanted in request.container_requests
            ]
        )

    async def allocate(self, containers: Sequence[Sequence[str]]) -> AllocateResponse:
        """Claim exactly the requested slots, decided and written with the node's other
        Allocates waiting at the time (one guarded write of this Instance for all of them).
        A device not discovered (yet) is refused before any slot is taken."""
        extras = await self.extras([self.spec.name])
        requested = [slot for ids in containers for slot in ids]
        node, namespace, name = self.env.node, self.spec.namespace, self.spec.name
        key = (namespace, name)
        grant = Grant(
            [[name] * len(ids) for ids in containers],
            {
                slots.Holding(self.spec.resource, s): SlotRef(name, index)
                for s in requested
                if (index := slot_index(name, s)) is not None
            },
        )

        def decide(state: State) -> tuple[dict[Key, slots.SlotPool], Grant]:
            fresh = state.get(key)
            if fresh is None:
                raise slots.AllocationError(f"Instance {namespace}/{name} is gone")
            return {key: slots.allocate_instance_level(fresh, node, requested)}, grant

        holdings = frozenset(slots.Holding(self.spec.resource, s) for s in requested)
        await self.env.commits.submit(Request(lambda: (key,), decide, holdings))
        found = self.env.cache.get(namespace, name)
        instances = {} if found is None else {name: found}
        configuration = found.spec.configuration_name if found is not None else ""
        return self.respond(grant.containers, instances, configuration, extras)
