"""The configuration-level plugin `akri.sh/<configuration>` (docs/design.md §5.3).

Its virtual devices are bound to slots only at Allocate. The engine decides over every
Instance of the Configuration at once; the decision is written one Instance at a time, each
write guarded and applied only to the state it was decided on. After a write that met a newer
state the whole decision is taken again on the fresh state; devices this node already holds
keep their slots, so the rounds converge on one consistent answer.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence

from akri import slots
from akri.agent.instances import Topic, configuration_topic
from akri.agent.plugins.servicer import PluginServicer
from akri.api import Instance
from akri.api.pool import released, view, with_usage
from akri.naming import slot_index
from akri.proto.deviceplugin.v1beta1.api_pb2 import AllocateResponse
from akri.slot_sync import SlotRef


def _apply_if_unchanged(
    decided_on: slots.Instance, decided: slots.Instance, fresh: Instance
) -> Instance | None:
    """Write `decided` only over the exact state it was decided on; else write nothing."""
    if view(fresh) != decided_on:
        return None
    return with_usage(fresh, decided.usage)


class ConfigurationPlugin(PluginServicer):
    send_interval = 0.05  # its list follows every Instance of the Configuration

    def _instances(self, excluded: Collection[str] = ()) -> dict[str, Instance]:
        found = self.env.cache.of_configuration(self.spec.namespace, self.spec.name)
        return {name: i for i in found if (name := i.metadata.name or "") and name not in excluded}

    def topic(self) -> Topic:
        return configuration_topic(self.spec.namespace, self.spec.name)

    def devices(self) -> dict[str, bool]:
        pool = [view(i) for i in self._instances().values()]
        ids = slots.cl_devices(self.spec.name, pool, self.env.node, unique=self.spec.unique)
        return dict.fromkeys(ids, True)

    async def allocate(self, containers: Sequence[Sequence[str]]) -> AllocateResponse:
        requested = {slots.Holding(self.spec.resource, d) for ids in containers for d in ids}
        async with self.env.allocations.lock:
            held = slots.holdings(map(view, self._instances().values()), self.env.node)
            try:
                decision = await self._bind(containers)
            except slots.AllocationError:
                await self._give_back(requested - held)
                raise
            self.env.allocations.granted(requested)
            self.env.allocations.bound(
                {
                    slots.Holding(self.spec.resource, b.device): SlotRef(b.instance, index)
                    for bindings in decision.containers
                    for b in bindings
                    if (index := slot_index(b.instance, b.slot)) is not None
                }
            )
        instances = self._instances()
        granted = [[binding.instance for binding in bindings] for bindings in decision.containers]
        return self.respond(granted, instances, self.spec.name)

    async def _bind(self, containers: Sequence[Sequence[str]]) -> slots.ClAllocation:
        """Decide and write until a decision finds everything written (bounded by the deadline)."""
        gone: set[str] = set()
        while True:
            pool = {name: view(i) for name, i in self._instances(gone).items()}
            decision = slots.allocate_cl(
                self.spec.name, pool.values(), self.env.node, containers, unique=self.spec.unique
            )
            if not decision.instances:
                return decision
            for name, decided in decision.instances.items():
                write = functools.partial(_apply_if_unchanged, pool[name], decided)
                stored = await self.env.cache.update(self.spec.namespace, name, write)
                if stored is None:
                    gone.add(name)
                if stored is None or view(stored).usage != decided.usage:
                    break  # decided on an outdated state: decide again on the fresh one

    async def _give_back(self, taken: set[slots.Holding]) -> None:
        """Free what a failed Allocate took, so a refused pod holds nothing."""
        for name, instance in self._instances().items():
            if slots.holdings([view(instance)], self.env.node) & taken:
                release = functools.partial(released, node=self.env.node, only=taken)
                await self.env.cache.update(self.spec.namespace, name, release)
