"""Follow Configurations and run one `ConfigurationRunner` per Configuration.

Also the agent's Configuration lookup (`get`), which the device plugins use for
uniqueDevices and brokerProperties. A Configuration that does not parse is reported (log and
Event, once per problem) and skipped; one that was valid before keeps running with its last
valid spec, so a bad edit never takes devices away. A deleted Configuration stops its runner,
which leaves its Instances.
"""

from __future__ import annotations

import asyncio
import functools
import logging

from kubernetes_asyncio import client
from pydantic import ValidationError

from akri.agent.changes import Changes
from akri.agent.runner import ConfigurationRunner, RunnerEnv
from akri.agent.status import CONFIGURATIONS
from akri.api import ConditionType, Configuration, ConfigurationStatus
from akri.kube.reflector import EventType, Key, Object, Reflector, object_key

log = logging.getLogger(__name__)

INVALID = ConditionType.INVALID_CONFIGURATION


class ConfigurationWatcher:
    def __init__(
        self,
        api_client: client.ApiClient,
        env: RunnerEnv,
        namespace: str | None = None,
    ) -> None:
        custom = client.CustomObjectsApi(api_client)
        group, version, plural = CONFIGURATIONS.group, CONFIGURATIONS.version, CONFIGURATIONS.plural
        list_configurations = (
            functools.partial(custom.list_cluster_custom_object, group, version, plural)
            if namespace is None
            else functools.partial(
                custom.list_namespaced_custom_object, group, version, namespace, plural
            )
        )
        self.reflector = Reflector(list_configurations, self._observe)
        self.changes = Changes()
        """Told after a Configuration was added or removed, or its spec changed."""
        self._env = env
        self._api_client = api_client
        self._runners: dict[Key, ConfigurationRunner] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._told: set[tuple[str, str]] = set()
        self._reporter = env.reporter()

    @property
    def synced(self) -> asyncio.Event:
        return self.reflector.synced

    def get(self, namespace: str, name: str) -> Configuration | None:
        """The Configuration's current (last valid) spec; None when unknown or deleted."""
        runner = self._runners.get((namespace, name))
        return None if runner is None else runner.configuration

    async def run(self) -> None:
        """Follow Configurations until cancelled, then stop every runner (leaving Instances)."""
        try:
            await self.reflector.run()
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _observe(self, kind: EventType, obj: Object) -> None:
        key = object_key(obj)
        runner = self._runners.get(key)
        uid = obj["metadata"].get("uid")
        if runner is not None and (
            kind == "DELETED"
            or obj["metadata"].get("deletionTimestamp")
            or runner.configuration.metadata.uid != uid
        ):
            del self._runners[key]
            runner.delete()
            log.info("Configuration %s/%s deleted: discovery stops", *key)
            self.changes.changed()
        if kind == "DELETED" or obj["metadata"].get("deletionTimestamp"):
            return
        try:
            configuration = Configuration.from_wire(obj)
        except ValidationError as error:
            await self._invalid(key, obj, error)
            return
        await self._valid_again(key, obj, configuration)
        runner = self._runners.get(key)
        if runner is None:
            self._start(key, configuration)
            self.changes.changed()
        else:
            spec_changed = configuration.spec != runner.configuration.spec
            runner.update(configuration)
            if spec_changed:  # not on every status write
                self.changes.changed()

    def _start(self, key: Key, configuration: Configuration) -> None:
        runner = ConfigurationRunner(configuration, self._env)
        self._runners[key] = runner
        task = asyncio.create_task(runner.run(), name=str(runner))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        log.info("Configuration %s/%s: discovery starts", *key)

    async def _valid_again(self, key: Key, obj: Object, configuration: Configuration) -> None:
        """Withdraw this node's InvalidConfiguration once the Configuration parses again."""
        status = configuration.status or ConfigurationStatus()
        mine = next((r for r in status.nodes if r.node == self._env.node), None)
        if mine is None or all(p.type != INVALID for p in mine.problems):
            return
        try:
            await self._reporter.report(obj, (INVALID,), {})
        except Exception:  # a watch handler must not fail; the next change tries again
            log.warning("clearing InvalidConfiguration of %s/%s failed", *key, exc_info=True)

    async def _invalid(self, key: Key, obj: Object, error: ValidationError) -> None:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        kept = " (its last valid spec stays in use)" if key in self._runners else ""
        message = f"Configuration {key[0]}/{key[1]} is invalid and ignored{kept}: {problems}"
        if (obj["metadata"].get("uid", ""), message) in self._told:
            return
        self._told.add((obj["metadata"].get("uid", ""), message))
        log.error("%s", message)
        try:  # Ready False with the reason, and an Event
            await self._reporter.report(obj, (INVALID,), {INVALID: message})
        except Exception:  # a watch handler must not fail; the next change reports again
            self._told.discard((obj["metadata"].get("uid", ""), message))
            log.warning("reporting Configuration %s/%s as invalid failed", *key, exc_info=True)
