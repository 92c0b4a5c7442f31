"""Kubelet emulator fixtures: a short socket directory, a running kubelet, fake plugins."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from akri.proto.deviceplugin.v1beta1.api_pb2 import Device
from akri.sim.kubelet import Kubelet
from tests.kubelet.plugin import FakePlugin

CALL_TIMEOUT_S = 5.0
"""Generous: only the timeout test relies on it firing, with its own small value."""

PluginFactory = Callable[..., Awaitable[FakePlugin]]


@pytest.fixture
def make_kubelet(socket_dir: Path) -> Callable[..., Kubelet]:
    def make(**options: Any) -> Kubelet:
        options.setdefault("call_timeout", CALL_TIMEOUT_S)
        return Kubelet("node-a", socket_dir / "dp", socket_dir / "pr", **options)

    return make


@pytest.fixture
async def kubelet(make_kubelet: Callable[..., Kubelet]) -> AsyncIterator[Kubelet]:
    async with make_kubelet() as running:
        yield running


@pytest.fixture
async def make_plugin(kubelet: Kubelet) -> AsyncIterator[PluginFactory]:
    """Start fake plugins registered with `kubelet`; all are stopped after the test."""
    plugins: list[FakePlugin] = []

    async def make(
        resource: str, devices: Sequence[Device] = (), *, register: bool = True, **options: Any
    ) -> FakePlugin:
        plugin = FakePlugin(kubelet.device_plugins_dir, resource, devices, **options)
        plugins.append(plugin)
        await plugin.serve()
        if register:
            await plugin.register(kubelet.socket)
        return plugin

    yield make
    for plugin in plugins:
        await plugin.stop()
