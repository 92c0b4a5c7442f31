"""Tell which of this node's device plugins cannot serve: PluginUnavailable on their Instances
and Configurations, withdrawn once they serve again.

A plugin knows why its last attempt to serve or register failed (`Plugin.problem`); without
this, a plugin that never registers leaves its pods Pending with nothing to say why. An
instance-level plugin's problem goes to its Instance and its Configuration, a
configuration-level plugin's to its Configuration (one message per node, joining its plugins').
Unusable slots (corrupt deviceUsage values) are told as Events on their Instance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from akri.agent.instance_reports import InstanceReporter
from akri.agent.plugins.desired import ConfigurationLookup, Key, Level, PluginSpec
from akri.agent.status import StatusReporter
from akri.api import ConditionType

TYPE = ConditionType.PLUGIN_UNAVAILABLE
UNUSABLE_SLOT = "UnusableSlot"


def grouped(
    problems: Mapping[PluginSpec, str], configuration_of: Callable[[str, str], str | None]
) -> tuple[dict[Key, str], dict[Key, str]]:
    """Pure: the problems by Instance and by Configuration (`configuration_of` an Instance)."""
    instances: dict[Key, str] = {}
    configurations: dict[Key, list[str]] = {}
    for spec, problem in sorted(problems.items(), key=lambda item: item[0].resource):
        if spec.level is Level.INSTANCE:
            instances[(spec.namespace, spec.name)] = problem
            configuration = configuration_of(spec.namespace, spec.name)
        else:
            configuration = spec.name
        if configuration is not None:
            configurations.setdefault((spec.namespace, configuration), []).append(problem)
    return instances, {key: "; ".join(found) for key, found in configurations.items()}


class PluginProblems:
    """Writes what changed since the last report; what failed to be written is tried again."""

    def __init__(
        self,
        instances: InstanceReporter,
        configurations: StatusReporter,
        lookup: ConfigurationLookup,
        configuration_of: Callable[[str, str], str | None],
    ) -> None:
        self._instances = instances
        self._configurations = configurations
        self._lookup = lookup
        self._configuration_of = configuration_of
        self._on_instances: dict[Key, str] = {}
        self._on_configurations: dict[Key, str] = {}
        self._told_slots: set[tuple[Key, str]] = set()

    async def report(self, problems: Mapping[PluginSpec, str]) -> None:
        """Make the reported problems these. Raises the API's errors (the caller retries)."""
        instances, configurations = grouped(problems, self._configuration_of)
        for key in sorted(instances.keys() | self._on_instances.keys()):
            problem = instances.get(key)
            if problem != self._on_instances.get(key):
                await self._instances.report(
                    key, (TYPE,), {} if problem is None else {TYPE: problem}
                )
                _remember(self._on_instances, key, problem)
        for key in sorted(configurations.keys() | self._on_configurations.keys()):
            problem = configurations.get(key)
            if problem != self._on_configurations.get(key):
                configuration = self._lookup(*key)
                if configuration is not None:  # a deleted one needs no report
                    wire = configuration.to_wire()
                    await self._configurations.report(
                        wire, (TYPE,), {} if problem is None else {TYPE: problem}
                    )
                _remember(self._on_configurations, key, problem)

    async def unusable_slots(self, key: Key, problems: Sequence[str]) -> None:
        """A Warning Event on the Instance for each unusable deviceUsage entry not told yet:
        a corrupt value takes a slot out of use until someone fixes it."""
        for problem in problems:
            if (key, problem) not in self._told_slots:
                self._told_slots.add((key, problem))
                await self._instances.event(key, UNUSABLE_SLOT, problem, "Warning")


def _remember(reported: dict[Key, str], key: Key, problem: str | None) -> None:
    if problem is None:
        reported.pop(key, None)
    else:
        reported[key] = problem
