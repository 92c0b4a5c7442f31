"""Which device plugins a node should run, decided from the Instances it sees.

Rules: docs/design.md §5.2, §5.3.

Pure: the manager compares this answer with the plugins it runs and starts or stops the
difference. An Instance is served only while its Configuration is known (its brokerProperties
and uniqueDevices come from there); a resource name is never served by two plugins.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from akri.api import Configuration, Instance
from akri.naming import resource_name, resource_name_problem

Key = tuple[str, str]
"""An Instance's namespace and name."""
ConfigurationLookup = Callable[[str, str], Configuration | None]
"""(namespace, name) -> the Configuration, or None when it is unknown or gone."""


class Level(StrEnum):
    INSTANCE = "instance"
    CONFIGURATION = "configuration"


@dataclass(frozen=True, order=True, slots=True)
class PluginSpec:
    """One plugin to run; a different spec for the same resource means a new plugin."""

    namespace: str
    level: Level
    name: str
    """The Instance (instance level) or the Configuration (configuration level)."""
    unique: bool = True
    """uniqueDevices of the Configuration; only the configuration level depends on it."""

    @property
    def resource(self) -> str:
        return resource_name(self.name)

    def __str__(self) -> str:
        return f"{self.level} plugin {self.resource} ({self.namespace}/{self.name})"


@dataclass(frozen=True)
class Decided:
    """What one `DesiredPlugins.update` changed."""

    resources: set[str] = field(default_factory=set)
    """Resources whose plugin changed: to be started, stopped or replaced."""
    problems: list[str] = field(default_factory=list)
    """Why some of their Instances or Configurations cannot be served, for the log."""


def _offers(instance: Instance, node: str, configurations: ConfigurationLookup) -> set[PluginSpec]:
    """The plugins `instance` calls for on `node`: none, or its own and its Configuration's."""
    namespace, name = instance.metadata.namespace, instance.metadata.name
    if not (namespace and name) or node not in instance.spec.nodes:
        return set()
    configuration = configurations(namespace, instance.spec.configuration_name)
    if configuration is None:
        return set()
    return {
        PluginSpec(namespace, Level.INSTANCE, name),
        PluginSpec(
            namespace,
            Level.CONFIGURATION,
            instance.spec.configuration_name,
            configuration.spec.unique_devices,
        ),
    }


class DesiredPlugins:
    """An instance-level plugin per Instance listing the node, a configuration-level one per
    Configuration with such an Instance, by resource name in `plugins`.

    Kept current one Instance at a time, so a change costs the same with ten Instances or ten
    thousand. On a resource-name clash the first spec in sort order wins, so the choice does
    not depend on the order Instances were seen in.
    """

    def __init__(self, node: str, configurations: ConfigurationLookup) -> None:
        self.plugins: dict[str, PluginSpec] = {}
        self._node = node
        self._configurations = configurations
        self._offered: dict[Key, set[PluginSpec]] = {}
        self._offers: dict[str, Counter[PluginSpec]] = {}
        """By resource: every spec some Instance calls for, and by how many Instances."""

    def update(self, instances: Mapping[Key, Instance | None]) -> Decided:
        """Take these Instances (by namespace and name; None: gone) into account."""
        decided, touched = Decided(), set()
        for key, instance in instances.items():
            before = self._offered.pop(key, set())
            after = _offers(instance, self._node, self._configurations) if instance else set()
            if after:
                self._offered[key] = after
            for spec in before - after:
                offers = self._offers[spec.resource]
                offers[spec] -= 1
                if not offers[spec]:
                    del offers[spec]
                if not offers:
                    del self._offers[spec.resource]
                touched.add(spec.resource)
            for spec in after - before:
                self._offers.setdefault(spec.resource, Counter())[spec] += 1
                touched.add(spec.resource)
        for resource in touched:
            if self._decide(resource, decided.problems):
                decided.resources.add(resource)
        return decided

    def rebuild(self, instances: Iterable[Instance]) -> Decided:
        """Decide everything again, as after a Configuration change."""
        current = {(i.metadata.namespace or "", i.metadata.name or ""): i for i in instances}
        return self.update({**dict.fromkeys(self._offered), **current})

    def _decide(self, resource: str, problems: list[str]) -> bool:
        """Choose the plugin of `resource` again; True when the choice changed."""
        winner = None
        for spec in sorted(self._offers.get(resource, ())):
            if (problem := resource_name_problem(spec.name)) is not None:
                problems.append(f"cannot serve {spec}: {problem}")
            elif winner is not None:
                problems.append(f"cannot serve {spec}: {resource} is served by {winner}")
            else:
                winner = spec
        before = self.plugins.pop(resource, None)
        if winner is not None:
            self.plugins[resource] = winner
        return winner != before
