"""Discovery fixtures: short socket directories, fast backoff, recorders that wait on changes."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from akri.agent.discovery.registration import RegistrationServer
from akri.agent.discovery.registry import HandlerRegistry
from akri.agent.discovery.session import DiscoverySession
from akri.backoff import Backoff
from akri.discovery.handler import DiscoveryHandler
from akri.discovery.model import Device, Status

DEADLINE_S = 30.0  # generous: only a hang should reach it, on a loaded machine too
"""How long a test waits for something that should happen; generous, never a pass/fail timer."""

DETAILS = "descriptions: [foo0, foo1]"


def fast_backoff() -> Backoff:
    return Backoff(initial=0.01, maximum=0.1)


async def wait_for(predicate: Callable[[], bool], changed: Callable[[], asyncio.Event]) -> None:
    """Wait until `predicate` holds, re-checking whenever the event `changed()` returns is set."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            event = changed()
            if predicate():
                return
            await event.wait()


class Recorder:
    """Collects a session's callbacks so tests can wait for a list or status to show up."""

    def __init__(self) -> None:
        self.lists: list[list[Device]] = []
        self.statuses: list[Status] = []
        self._changed = asyncio.Event()

    def on_devices(self, devices: list[Device]) -> None:
        self.lists.append(devices)
        self._notify()

    def on_status(self, status: Status) -> None:
        self.statuses.append(status)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    @property
    def ids(self) -> list[str] | None:
        return [d.id for d in self.lists[-1]] if self.lists else None

    @property
    def status(self) -> Status | None:
        return self.statuses[-1] if self.statuses else None

    async def until(self, predicate: Callable[[Recorder], bool]) -> None:
        await wait_for(lambda: predicate(self), lambda: self._changed)

    async def until_ids(self, *ids: str) -> None:
        await self.until(lambda r: r.ids == list(ids))


async def registered(registry: HandlerRegistry, name: str, count: int = 1) -> None:
    await wait_for(lambda: len(registry.handlers(name)) == count, registry.changed)


@pytest.fixture
def registry() -> HandlerRegistry:
    return HandlerRegistry()


@pytest.fixture
async def agent(registry: HandlerRegistry, socket_dir: Path) -> AsyncIterator[RegistrationServer]:
    async with RegistrationServer(registry, socket_dir) as server:
        yield server


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


SessionFactory = Callable[..., DiscoverySession]


@pytest.fixture
def make_session(registry: HandlerRegistry, recorder: Recorder) -> SessionFactory:
    def make(
        handler: str = "debugEcho", details: str = DETAILS, **options: Any
    ) -> DiscoverySession:
        options.setdefault("backoff", fast_backoff)
        return DiscoverySession(
            registry,
            handler,
            details,
            options.pop("properties", {}),
            on_devices=recorder.on_devices,
            on_status=recorder.on_status,
            **options,
        )

    return make


def only(registry: HandlerRegistry, name: str) -> DiscoveryHandler:
    (handler,) = registry.handlers(name).values()
    return handler
