"""Which device plugins a node should run, decided from the Instances it sees (DESIGN §5.2, §5.3).

Pure: the manager compares this answer with the plugins it runs and starts or stops the
difference. An Instance is served only while its Configuration is known (its brokerProperties
and uniqueDevices come from there); a resource name is never served by two plugins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from akri.api import Configuration, Instance
from akri.naming import resource_name, resource_name_problem

ConfigurationLookup = Callable[[str, str], Configuration | None]
"""(namespace, name) -> the Configuration, or None when it is unknown or gone."""


class Level(StrEnum):
    INSTANCE = "instance"
    CONFIGURATION = "configuration"


@dataclass(frozen=True, order=True)
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
class Desired:
    plugins: dict[str, PluginSpec] = field(default_factory=dict)
    """By resource name."""
    problems: list[str] = field(default_factory=list)
    """Why some Instances or Configurations cannot be served, for the log."""


def _candidates(
    instances: Iterable[Instance], node: str, configurations: ConfigurationLookup
) -> set[PluginSpec]:
    specs = set()
    for instance in instances:
        namespace, name = instance.metadata.namespace, instance.metadata.name
        if not (namespace and name) or node not in instance.spec.nodes:
            continue
        configuration = configurations(namespace, instance.spec.configuration_name)
        if configuration is None:
            continue
        unique = configuration.spec.unique_devices
        specs.add(PluginSpec(namespace, Level.INSTANCE, name))
        specs.add(
            PluginSpec(namespace, Level.CONFIGURATION, instance.spec.configuration_name, unique)
        )
    return specs


def desired_plugins(
    instances: Iterable[Instance], node: str, configurations: ConfigurationLookup
) -> Desired:
    """An instance-level plugin per Instance listing `node`, a configuration-level one per
    Configuration with such an Instance; on a resource-name clash the first spec in sort order
    wins, so the choice does not depend on the order Instances were seen in."""
    desired = Desired()
    for spec in sorted(_candidates(instances, node, configurations)):
        if (problem := resource_name_problem(spec.name)) is not None:
            desired.problems.append(f"cannot serve {spec}: {problem}")
        elif (taken := desired.plugins.get(spec.resource)) is not None:
            desired.problems.append(f"cannot serve {spec}: {spec.resource} is served by {taken}")
        else:
            desired.plugins[spec.resource] = spec
    return desired
