"""The configuration-level plugin `akri.sh/<configuration>` (docs/design.md §5.3).

Its virtual devices are bound to slots only at Allocate. The engine decides over every
Instance of the Configuration at once, together with the node's other waiting Allocates, and
the decision is written one Instance at a time, each write guarded and applied only to the
state it was decided on (`group_commit`). After a write that met a newer state the whole
decision is taken again on the fresh state; devices this node already holds keep their slots,
so the rounds converge on one consistent answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from akri import slots
from akri.agent.instances import Topic, configuration_topic
from akri.agent.plugins.group_commit import Grant, Request, State
from akri.agent.plugins.servicer import PluginServicer
from akri.api import Instance
from akri.api.pool import view
from akri.kube.reflector import Key
from akri.naming import slot_index
from akri.proto.deviceplugin.v1beta1.api_pb2 import AllocateResponse
from akri.slot_sync import SlotRef


class ConfigurationPlugin(PluginServicer):
    send_interval = 0.05  # its list follows every Instance of the Configuration

    def _instances(self) -> dict[str, Instance]:
        found = self.env.cache.of_configuration(self.spec.namespace, self.spec.name)
        return {name: i for i in found if (name := i.metadata.name or "")}

    def topic(self) -> Topic:
        return configuration_topic(self.spec.namespace, self.spec.name)

    def devices(self) -> dict[str, bool]:
        pool = [view(i) for i in self._instances().values()]
        ids = slots.configuration_level_devices(
            self.spec.name, pool, self.env.node, unique=self.spec.unique
        )
        return dict.fromkeys(ids, True)

    def wakes(self) -> Callable[[Key], bool]:
        """Only a change of some Instance's `cl_share`: most are slots taken and released
        elsewhere, which leave the list as it is, and each one listed the whole
        Configuration again."""
        node, unique = self.env.node, self.spec.unique
        return self.env.cache.reads_changed(
            lambda instance: slots.configuration_level_share(view(instance), node, unique=unique),
            (self.spec.namespace, self.spec.name),
        )

    async def allocate(self, containers: Sequence[Sequence[str]]) -> AllocateResponse:
        """Bind the requested virtual devices, decided and written with the node's other
        Allocates waiting at the time; refused, this request keeps nothing. The devices are
        known only once bound: one not discovered (yet) fails the call after its slot was
        written, and the reclaimer frees that slot as no container uses it."""
        namespace, configuration, node = self.spec.namespace, self.spec.name, self.env.node

        def reads() -> list[Key]:
            return [(namespace, name) for name in self._instances()]

        def decide(state: State) -> tuple[dict[Key, slots.SlotPool], Grant]:
            pool = [i for (ns, _), i in state.items() if ns == namespace]
            decision = slots.allocate_configuration_level(
                configuration, pool, node, containers, unique=self.spec.unique
            )
            grant = Grant(
                [[binding.instance for binding in bindings] for bindings in decision.containers],
                {
                    slots.Holding(self.spec.resource, b.device): SlotRef(b.instance, index)
                    for bindings in decision.containers
                    for b in bindings
                    if (index := slot_index(b.instance, b.slot)) is not None
                },
            )
            changed = {(namespace, name): i for name, i in decision.pools.items()}
            return changed, grant

        holdings = frozenset(
            slots.Holding(self.spec.resource, device) for ids in containers for device in ids
        )
        grant = await self.env.commits.submit(Request(reads, decide, holdings))
        extras = await self.extras({name for names in grant.containers for name in names})
        return self.respond(grant.containers, self._instances(), configuration, extras)
