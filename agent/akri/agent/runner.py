"""Everything this node does for one Configuration: discover, publish Instances, report.

One loop per Configuration, woken by a new device list, a discovery status, a changed spec, a
change to one of its Instances (another node joined, an old Instance was collected) or a grace
timer. Each round publishes the current device list (a no-op when nothing differs) and reports
this node's view when it changed. A spec change restarts discovery only when what the handler
sees changed (handler name, details, properties); capacity and brokerProperties just reach the
Instances in the next round. Failures are retried with capped backoff; they never end the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubernetes_asyncio.client.exceptions import ApiException

from akri.agent.conditions import (
    RUNNER_PROBLEMS,
    discovery_problems,
    explained,
    write_refusal,
)
from akri.agent.devices import DeviceStore
from akri.agent.discovery.kube_properties import Reader, resolve_properties
from akri.agent.discovery.registry import HandlerRegistry
from akri.agent.discovery.session import DiscoverySession
from akri.agent.instances import InstanceCache, configuration_topic
from akri.agent.metrics import AgentMetrics
from akri.agent.publisher import InstancePublisher, reads
from akri.agent.status import StatusReporter
from akri.api import ConditionType, Configuration, ConfigurationStatus, DiscoveryHandlerInfo
from akri.backoff import Backoff
from akri.discovery.model import Device, InvalidProperties, Status
from akri.kube.calls import error_message
from akri.logs import OnceLog
from akri.naming import configuration_name_problem

log = logging.getLogger(__name__)

WRITE_REFUSED = ConditionType.WRITE_REFUSED


class Refused(Exception):
    """The API refused an Instance write; the round is tried again with backoff."""


@dataclass(frozen=True)
class RunnerEnv:
    """What every Configuration's runner on this node shares."""

    node: str
    registry: HandlerRegistry
    cache: InstanceCache
    devices: DeviceStore
    """Where discovered devices' mounts and device nodes go for the plugins."""
    reporter: Callable[[], StatusReporter]
    read_properties: Reader
    offline_grace: float
    metrics: AgentMetrics
    drop_handler_after: float = 300.0
    backoff: Callable[[], Backoff] = Backoff
    allowed_mounts: tuple[Path, ...] = ()
    """Host directories devices may have mounts under (settings.allowed_mount_paths)."""


class ConfigurationRunner:
    def __init__(self, configuration: Configuration, env: RunnerEnv) -> None:
        self.configuration = configuration
        self._env = env
        loop = asyncio.get_running_loop()
        self._clock = loop.time
        self.publisher = InstancePublisher(
            env.cache, env.node, env.offline_grace, self._clock, env.devices, env.metrics
        )
        self._reporter = env.reporter()
        self._warn_once = OnceLog(log)
        self._wake = asyncio.Event()
        self._deleted = False
        self._devices: list[Device] | None = None  # None: nothing reported yet, touch nothing
        self._shared = False
        self._status: Status | None = None
        self._reported: tuple[Status, int | None] | None = None
        self._session: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[str, str]:
        metadata = self.configuration.metadata
        return metadata.namespace or "default", metadata.name or ""

    def update(self, configuration: Configuration) -> None:
        self.configuration = configuration
        self._wake.set()

    def delete(self) -> None:
        """Stop discovering and leave the Configuration's Instances; `run` then returns."""
        self._deleted = True
        self._wake.set()

    async def run(self) -> None:
        follower = asyncio.create_task(self._follow_cache(), name=f"{self} cache")
        try:
            await self._env.cache.synced.wait()
            await self._loop()
            await self._cancel(self._session)
            try:
                await self.publisher.leave_all(self.configuration)
            except Exception:  # the garbage collector deletes the Instances anyway
                log.exception("%s: deleted, but leaving its Instances failed", self)
        finally:
            # Cancel both before awaiting either: a second cancellation while awaiting the first
            # must not leave the other running.
            tasks = [task for task in (self._session, follower) if task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        log.info("%s: stopped", self)

    async def _loop(self) -> None:
        """Rounds until the Configuration is deleted."""
        discovering: DiscoveryHandlerInfo | None = None
        backoff = self._env.backoff()
        while not self._deleted:
            self._wake.clear()
            configuration = self.configuration
            wanted = configuration.spec.discovery_handler
            if (problem := configuration_name_problem(self.key[1])) is not None:
                self._status = Status(ConditionType.INVALID_NAME, problem)
            elif wanted != discovering:
                await self._cancel(self._session)
                self._session = asyncio.create_task(self._discover(wanted), name=str(self))
                discovering = wanted
            try:
                wake_at = await self._round(configuration)
                backoff.reset()
            except Refused as error:  # reported on the Configuration
                self._warn_once(f"{self}: {error} (retrying; logged once)")
                wake_at = self._clock() + backoff.next_delay()
            except Exception:  # any failure (API down, a bug) is retried, never fatal
                log.exception("%s: publishing or reporting failed; retrying", self)
                wake_at = self._clock() + backoff.next_delay()
            await self._sleep(wake_at)

    def __str__(self) -> str:
        return "Configuration {}/{}".format(*self.key)

    async def _round(self, configuration: Configuration) -> float | None:
        expiry = None
        if self._devices is not None:
            refused = None
            try:
                expiry = await self.publisher.publish(configuration, self._shared, self._devices)
            except ApiException as error:
                refused = write_refusal(error.status, error_message(error))
                if refused is None:
                    raise
            await self._report_refusal(configuration, refused)
            if refused is not None:
                raise Refused(refused)
        if self._status is not None:
            view = explained(
                self._status,
                configuration.spec.discovery_handler.name,
                self._env.registry.names(),
            )
            reported = (view, configuration.metadata.generation)
            if reported != self._reported:
                await self._reporter.report(
                    configuration.to_wire(), RUNNER_PROBLEMS, discovery_problems(view)
                )
                self._reported = reported
        return expiry

    async def _report_refusal(self, configuration: Configuration, refused: str | None) -> None:
        """Make this node's WriteRefused say `refused`, when the stored status says otherwise."""
        status = configuration.status or ConfigurationStatus()
        mine = next((r for r in status.nodes if r.node == self._env.node), None)
        stored = next(
            (p.message for p in (mine.problems if mine else []) if p.type == WRITE_REFUSED), None
        )
        if stored != refused:
            problems: dict[str, str] = {} if refused is None else {WRITE_REFUSED: refused}
            await self._reporter.report(configuration.to_wire(), (WRITE_REFUSED,), problems)

    async def _sleep(self, deadline: float | None) -> None:
        timeout = None if deadline is None else max(0.0, deadline - self._clock())
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()

    async def _follow_cache(self) -> None:
        """Wake a round when an Instance changes what a round reads of it (`publisher.reads`):
        on a busy cluster most changes are slots taken and released on other nodes, and
        planning again for each of them cost every node's agent CPU for nothing."""
        namespace, name = self.key
        node = self._env.node
        changed = self._env.cache.reads_changed(lambda i: reads(i, node), self.key)
        with self._env.cache.subscribe(configuration_topic(namespace, name), changed) as changes:
            while True:
                await changes.next()
                self._wake.set()

    @staticmethod
    async def _cancel(task: asyncio.Task[None] | None) -> None:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _discover(self, handler: DiscoveryHandlerInfo) -> None:
        """Resolve the properties (retrying: a Secret may appear later), then discover."""
        namespace = self.key[0]
        backoff = self._env.backoff()
        while True:
            try:
                properties = await resolve_properties(
                    handler.discovery_properties, namespace, self._env.read_properties
                )
                break
            except InvalidProperties as error:
                self._on_status(error.status)
            except Exception:  # e.g. the API unreachable: nothing the user must fix, retry
                log.exception("%s: cannot read discoveryProperties; retrying", self)
            await asyncio.sleep(backoff.next_delay())
        started = self._clock()
        first = True
        metrics = self._env.metrics

        def on_devices(devices: list[Device]) -> None:
            nonlocal first
            if first:
                metrics.discovery_response_time.labels(self.key[1]).observe(self._clock() - started)
                first = False
            metrics.discovery_response_result.labels(handler.name, "Success").inc()
            handlers = self._env.registry.handlers(handler.name)
            if handlers:  # mixed registrations: the endpoint whose devices win merging decides
                self._shared = handlers[min(handlers)].shared
            self._devices = devices
            self._wake.set()

        session = DiscoverySession(
            self._env.registry,
            handler.name,
            handler.discovery_details,
            properties,
            on_devices=on_devices,
            on_status=self._on_status,
            backoff=self._env.backoff,
            drop_after=self._env.drop_handler_after,
            allowed_mounts=self._env.allowed_mounts,
        )
        await session.run()

    def _on_status(self, status: Status) -> None:
        if not status.ok:
            name = self.configuration.spec.discovery_handler.name
            results = self._env.metrics.discovery_response_result
            results.labels(name, status.condition.value).inc()
        if status.condition is ConditionType.INVALID_DETAILS:
            self._devices = []  # these details discover nothing, whatever was found before
        self._status = status
        self._wake.set()
