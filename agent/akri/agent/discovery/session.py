"""Discovery for one Configuration: every endpoint of its handler, merged into one device list.

Each endpoint is followed by its own task. A failing endpoint's devices leave the list at once
(the agent's offline grace period keeps shared Instances through short outages) and it is
retried with capped backoff; an endpoint failing for `drop_after` seconds is unregistered. A
re-registration replaces the endpoint's handler, which restarts it without waiting for backoff.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence
from contextlib import aclosing
from pathlib import Path

from akri.agent.discovery import host_paths
from akri.agent.discovery.merge import merge, summarise
from akri.agent.discovery.registry import EMBEDDED, HandlerRegistry
from akri.api import ConditionType
from akri.backoff import Backoff
from akri.discovery.handler import DiscoveryHandler
from akri.discovery.model import Device, DiscoveryError, InvalidDetails, Status

log = logging.getLogger(__name__)

DevicesCallback = Callable[[list[Device]], None]
StatusCallback = Callable[[Status], None]


class DiscoverySession:
    """Runs (in `run`) until cancelled, calling back only when the list or status changes."""

    def __init__(
        self,
        registry: HandlerRegistry,
        handler: str,
        details: str,
        properties: Mapping[str, bytes],
        *,
        on_devices: DevicesCallback,
        on_status: StatusCallback,
        backoff: Callable[[], Backoff] = Backoff,
        drop_after: float = 300.0,
        allowed_mounts: Sequence[Path] = (),
    ) -> None:
        self.devices: list[Device] | None = None
        """The merged list last reported; None until an endpoint has delivered one."""
        self.status: Status | None = None
        self._registry = registry
        self._handler = handler
        self._details = details
        self._properties = dict(properties)
        self._on_devices = on_devices
        self._on_status = on_status
        self._backoff = backoff
        self._drop_after = drop_after
        self._allowed_mounts = tuple(allowed_mounts)
        self._ready = Status(ConditionType.READY, f"discovering with handler {handler!r}")
        self._lists: dict[str, list[Device]] = {}
        self._states: dict[str, Status | None] = {}
        self._workers: dict[str, tuple[DiscoveryHandler, asyncio.Task[None]]] = {}

    async def run(self) -> None:
        try:
            while True:
                changed = self._registry.changed()
                await self._follow_registry()
                self._publish()
                await changed.wait()
        finally:
            await self._stop(list(self._workers))

    async def _follow_registry(self) -> None:
        current = self._registry.handlers(self._handler)
        await self._stop([e for e, (h, _) in self._workers.items() if current.get(e) is not h])
        for endpoint, handler in current.items():
            if endpoint not in self._workers:
                self._states[endpoint] = None
                task = asyncio.create_task(
                    self._follow(endpoint, handler), name=f"discover {self._handler}@{endpoint}"
                )
                self._workers[endpoint] = (handler, task)

    async def _stop(self, endpoints: list[str]) -> None:
        tasks = [self._workers.pop(endpoint)[1] for endpoint in endpoints]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for endpoint in endpoints:
            self._lists.pop(endpoint, None)
            self._states.pop(endpoint, None)

    async def _follow(self, endpoint: str, handler: DiscoveryHandler) -> None:
        """Stream from one endpoint for as long as it stays registered, retrying failures."""
        backoff = self._backoff()
        loop = asyncio.get_running_loop()
        failing_since: float | None = None
        while True:
            try:
                async with aclosing(handler.discover(self._details, self._properties)) as lists:
                    async for devices in lists:
                        backoff.reset()
                        failing_since = None
                        self._update(endpoint, *self._admitted(devices))
                status = Status(
                    ConditionType.HANDLER_UNAVAILABLE,
                    f"discovery handler {self._handler!r} at {endpoint} ended its device stream",
                )
            except InvalidDetails as error:
                # log text, not the error: its traceback would pin the handler's channel
                log.warning("%s@%s refused the details: %s", self._handler, endpoint, str(error))
                self._update(endpoint, None, error.status)
                return  # only new details or a re-registration (a new session or task) can help
            except DiscoveryError as error:
                status = error.status
            except Exception as error:  # an embedded handler's bug must not end discovery
                log.exception("discovery handler %s@%s failed", self._handler, endpoint)
                status = Status(ConditionType.HANDLER_UNAVAILABLE, f"{endpoint}: {error!r}")
            self._update(endpoint, None, status)
            failing_since = loop.time() if failing_since is None else failing_since
            failing_for = loop.time() - failing_since
            if endpoint != EMBEDDED and failing_for >= self._drop_after:
                log.warning(
                    "dropping %s@%s: failing for %.0f s", self._handler, endpoint, failing_for
                )
                self._registry.remove(self._handler, endpoint, handler)
                return
            delay = backoff.next_delay()
            log.info("%s; retrying in %.1f s", status.message, delay)
            await asyncio.sleep(delay)

    def _admitted(self, devices: list[Device]) -> tuple[list[Device], Status]:
        """The devices whose host paths are allowed, and READY or why one was left out."""
        kept, refused = host_paths.admitted(devices, self._allowed_mounts)
        if not refused:
            return kept, self._ready
        more = f" (and {len(refused) - 1} more devices)" if len(refused) > 1 else ""
        return kept, Status(ConditionType.REFUSED_HOST_PATH, refused[0] + more)

    def _update(self, endpoint: str, devices: list[Device] | None, status: Status) -> None:
        if devices is None:
            self._lists.pop(endpoint, None)
        else:
            self._lists[endpoint] = devices
        self._states[endpoint] = status
        self._publish()

    def _publish(self) -> None:
        merged = merge(self._lists[endpoint] for endpoint in sorted(self._lists))
        if (self._lists or self.devices is not None) and merged != self.devices:
            self.devices = merged
            self._on_devices(merged)
        status = summarise(self._handler, self._states)
        if status is not None and status != self.status:
            self.status = status
            self._on_status(status)
