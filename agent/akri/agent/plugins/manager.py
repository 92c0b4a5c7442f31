"""Keeps exactly the right device plugins alive on this node (docs/design.md §5.2, §5.3, §6).

Follows the Instance cache and the Configurations: an instance-level plugin for every Instance
that lists this node, a configuration-level plugin for every Configuration with such an
Instance. What to run is decided by `desired_plugins`; this module only starts and stops the
difference. Capacity and deviceUsage changes need no restart: the running plugins' lists follow
the cache. A changed uniqueDevices replaces the configuration-level plugin. Instance changes are
decided one Instance at a time; a Configuration change (or a failed round) decides everything.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from akri import slots
from akri.agent.changes import Changes
from akri.agent.devices import DeviceStore
from akri.agent.instances import InstanceCache, Subscription
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins.allocations import Allocations
from akri.agent.plugins.configuration_level import ConfigurationPlugin
from akri.agent.plugins.desired import (
    ConfigurationLookup,
    Decided,
    DesiredPlugins,
    Key,
    Level,
    PluginSpec,
)
from akri.agent.plugins.group_commit import GroupCommit
from akri.agent.plugins.instance_level import InstancePlugin
from akri.agent.plugins.kubelet_watch import WATCH_INTERVAL_S, KubeletWatch
from akri.agent.plugins.plugin import (
    CONCURRENT_REGISTRATIONS,
    REGISTER_TIMEOUT_S,
    Plugin,
    register_backoff,
)
from akri.agent.plugins.problems import PluginProblems
from akri.agent.plugins.registration import KubeletRegistration
from akri.agent.plugins.servicer import PluginEnv, PluginServicer
from akri.agent.plugins.trim import AfterBurst, malloc_trim
from akri.api import Instance
from akri.api.pool import view
from akri.backoff import Backoff
from akri.kube.calls import describe
from akri.logs import OnceLog
from akri.proto.deviceplugin.v1beta1.constants import DEVICE_PLUGIN_PATH, KUBELET_SOCKET_NAME
from akri.tasks import finish

log = logging.getLogger(__name__)

ALLOCATE_TIMEOUT_S = 5.0
REDISCOVERY_WAIT_S = 3.0

_SERVICERS: Mapping[Level, type[PluginServicer]] = {
    Level.INSTANCE: InstancePlugin,
    Level.CONFIGURATION: ConfigurationPlugin,
}


class PluginManager:
    """Run with `run()` in the agent's task group; `configuration_changes` is told whenever a
    Configuration is added, changed or deleted."""

    def __init__(
        self,
        cache: InstanceCache,
        configurations: ConfigurationLookup,
        node: str,
        *,
        configuration_changes: Changes,
        devices: DeviceStore,
        allocations: Allocations,
        metrics: AgentMetrics,
        device_plugins_dir: Path = Path(DEVICE_PLUGIN_PATH),
        allocate_timeout: float = ALLOCATE_TIMEOUT_S,
        rediscovery_wait: float = REDISCOVERY_WAIT_S,
        watch_interval: float = WATCH_INTERVAL_S,
        register_backoff: Callable[[], Backoff] = register_backoff,
        problems: PluginProblems | None = None,
    ) -> None:
        """`problems`, when given, is told which plugins cannot serve (and why)."""
        self._cache = cache
        self._configurations = configurations
        self._configuration_changes = configuration_changes
        self._node = node
        self._directory = device_plugins_dir
        self._backoff = register_backoff
        self._warn_once = OnceLog(log)
        self._env = PluginEnv(
            cache=cache,
            configurations=configurations,
            node=node,
            commits=GroupCommit(cache, node, allocations, allocate_timeout, metrics),
            allocate_timeout=allocate_timeout,
            devices=devices,
            rediscovery_wait=rediscovery_wait,
            warn_once=self._warn_once,
            metrics=metrics,
        )
        self._watch = KubeletWatch(device_plugins_dir / KUBELET_SOCKET_NAME, watch_interval)
        self._registration = KubeletRegistration(self._watch.kubelet_socket, REGISTER_TIMEOUT_S)
        self._wake = asyncio.Event()
        self._registrations = asyncio.Semaphore(CONCURRENT_REGISTRATIONS)
        self._desired = DesiredPlugins(node, configurations)
        self._decided = False  # a first round has decided everything
        self._everything = True  # the next round decides everything again
        self._changed: set[Key] = set()  # Instances changed since the last round
        self._running: dict[str, tuple[Plugin, asyncio.Task[None]]] = {}
        self._problems = problems
        self._problems_changed = asyncio.Event()
        self._trim = AfterBurst(malloc_trim())

    @property
    def plugins(self) -> dict[str, Plugin]:
        """The plugins running now, by resource name."""
        return {resource: plugin for resource, (plugin, _) in self._running.items()}

    def _plugins(self) -> list[Plugin]:
        return [plugin for plugin, _ in self._running.values()]

    @property
    def commits(self) -> GroupCommit:
        """Where this node's Allocates are decided and written together."""
        return self._env.commits

    @property
    def ready(self) -> bool:
        """Every plugin this node should run is running and registered with the kubelet."""
        return (
            self._decided
            and self._running.keys() == self._desired.plugins.keys()
            and all(plugin.registered for plugin, _ in self._running.values())
        )

    def _configurations_changed(self) -> None:
        self._everything = True
        self._wake.set()

    async def run(self) -> None:
        """Follow the cache until cancelled, then stop every plugin."""
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(self._watch.run(self._plugins))
                if self._problems is not None:
                    tasks.create_task(self._report_problems(self._problems))
                reads_changed = self._cache.reads_changed(self._reads)
                # After a failed round (`_everything`), any change tries again.
                with (
                    self._configuration_changes.listening(self._configurations_changed),
                    self._cache.subscribe(
                        relevant=lambda key: reads_changed(key) or self._everything
                    ) as changes,
                ):
                    tasks.create_task(self._follow(changes))
                    await self._cache.synced.wait()
                    while True:
                        self._wake.clear()
                        await self._round()
                        await self._wake.wait()
        finally:
            await finish(self._shut_down())

    async def _shut_down(self) -> None:
        await self._stop(*self._running)
        await self._registration.close()
        await self._env.commits.close()

    def _reads(self, instance: Instance) -> tuple[object, ...]:
        """All that a round reads of `instance` besides its name (the Configurations are
        followed apart): a change that keeps it, such as a slot taken elsewhere, needs none."""
        node, nodes = self._node, instance.spec.nodes
        if node not in nodes:
            return False, instance.spec.configuration_name
        problems = slots.usage_problems(view(instance))
        return True, instance.spec.configuration_name, problems, min(nodes) == node

    async def _follow(self, changes: Subscription) -> None:
        while True:
            changed = await changes.next()  # awaited first: `_round` swaps the set meanwhile
            self._changed |= changed
            self._wake.set()

    async def _round(self) -> None:
        everything, self._everything = self._everything, False
        changed, self._changed = self._changed, set()
        try:
            if everything:
                instances = self._cache.all()
                decided = self._desired.rebuild(instances)
                resources = self._running.keys() | self._desired.plugins.keys()
            else:
                found = {key: self._cache.get(*key) for key in changed}
                instances = [i for i in found.values() if i is not None]
                decided = self._desired.update(found)
                resources = decided.resources
            self._decided = True
            await self._apply(resources)
            await self._warn(decided, instances)
        except Exception:  # the next change tries again, on everything
            log.exception("updating the device plugins failed")
            self._everything = True

    async def _warn(self, decided: Decided, instances: list[Instance]) -> None:
        """Log each problem once; unusable slots are also an Event, recorded by the first node
        in `nodes` only, so a hundred nodes do not record it a hundred times."""
        for problem in decided.problems:
            self._warn_once(problem)
        for instance in instances:
            if self._node not in instance.spec.nodes:
                continue
            problems = slots.usage_problems(view(instance))
            for problem in problems:
                self._warn_once(problem)
            if problems and self._problems is not None and min(instance.spec.nodes) == self._node:
                key = (instance.metadata.namespace or "", instance.metadata.name or "")
                await self._problems.unusable_slots(key, problems)

    async def _apply(self, resources: Iterable[str]) -> None:
        """Stop and start plugins so that these resources are served as desired."""
        for resource in sorted(resources):
            wanted = self._desired.plugins.get(resource)
            running = self._running.get(resource)
            if running is not None and running[0].spec != wanted:
                await self._stop(resource)
            if wanted is not None and resource not in self._running:
                self._start(wanted)

    async def _report_problems(self, problems: PluginProblems) -> None:
        """Report the running plugins' problems whenever one changes; retry what fails."""
        backoff = self._backoff()
        while True:
            await self._problems_changed.wait()
            self._problems_changed.clear()
            current = {
                plugin.spec: plugin.problem
                for plugin, _ in self._running.values()
                if plugin.problem is not None
            }
            try:
                await problems.report(current)
                backoff.reset()
            except Exception as error:  # the API may be down: report again later
                log.warning(
                    "reporting device plugin problems failed: %s; retrying", describe(error)
                )
                await asyncio.sleep(backoff.next_delay())
                self._problems_changed.set()

    def _start(self, spec: PluginSpec) -> None:
        plugin = Plugin(
            functools.partial(_SERVICERS[spec.level], spec, self._env),
            self._directory,
            self._registration,
            backoff=self._backoff,
            turns=self._registrations,
            churned=self._trim.touch,
            problem_changed=self._problems_changed.set,
        )
        task = asyncio.create_task(plugin.run(), name=f"plugin {spec.resource}")
        self._running[spec.resource] = (plugin, task)
        log.info("started %s", spec)

    async def _stop(self, *resources: str) -> None:
        stopping = [self._running.pop(resource) for resource in resources]
        for _, task in stopping:
            task.cancel()
        await finish(*(task for _, task in stopping))
        for plugin, _ in stopping:
            if plugin.problem is not None:
                self._problems_changed.set()  # a stopped plugin's problem is withdrawn
            log.info("stopped %s", plugin.spec)
