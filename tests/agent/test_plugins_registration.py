"""The node's plugins register over one connection per kubelet incarnation (docs/design.md §6).

A relay stands in front of the kubelet emulator's kubelet.sock and counts the connections made
to it; restarting the relay re-creates the socket, as a restarting kubelet does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from akri.agent.plugins.kubelet_watch import Identity, socket_identity
from akri.agent.plugins.registration import KubeletRegistration
from akri.proto.deviceplugin.v1beta1.api_pb2 import RegisterRequest
from akri.proto.deviceplugin.v1beta1.constants import VERSION
from akri.sim.kubelet import Kubelet
from tests.kubelet.plugin import FakePlugin

PLUGINS = 8
DEADLINE_S = 10.0


class Relay:
    """A unix socket that forwards every connection to `target` and counts them."""

    def __init__(self, path: Path, target: Path) -> None:
        self.path = path
        self.target = target
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def start(self) -> Identity:
        self._server = await asyncio.start_unix_server(self._relay, path=self.path)
        identity = socket_identity(self.path)
        assert identity is not None
        return identity

    async def stop(self) -> None:
        """Hang up on everyone and delete the socket."""
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        self._writers.clear()
        self.path.unlink(missing_ok=True)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        self._writers += [writer, up_writer]
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


@dataclass
class Setup:
    kubelet: Kubelet
    relay: Relay
    registration: KubeletRegistration
    plugins: list[FakePlugin]


@pytest.fixture
async def setup(socket_dir: Path) -> AsyncIterator[Setup]:
    """A kubelet behind a relay (not yet started), a registration and plugins serving."""
    async with Kubelet("node-a", socket_dir / "dp", socket_dir / "pr") as kubelet:
        relay = Relay(socket_dir / "kubelet.sock", kubelet.socket)
        registration = KubeletRegistration(relay.path, DEADLINE_S)
        served = [FakePlugin(kubelet.device_plugins_dir, f"akri.sh/r{i}") for i in range(PLUGINS)]
        try:
            for plugin in served:
                await plugin.serve()
            yield Setup(kubelet, relay, registration, served)
        finally:
            await registration.close()
            await relay.stop()
            for plugin in served:
                await plugin.stop()


def request(plugin: FakePlugin) -> RegisterRequest:
    return RegisterRequest(
        version=VERSION, endpoint=plugin.socket.name, resource_name=plugin.resource
    )


async def test_registrations_share_one_connection_per_kubelet_incarnation(setup: Setup) -> None:
    relay, registration, served = setup.relay, setup.registration, setup.plugins
    first = await relay.start()
    await asyncio.gather(*(registration.register(request(p), first, DEADLINE_S) for p in served))
    assert relay.connections == 1
    await relay.stop()
    second = await relay.start()  # the kubelet restarted: a new socket
    assert second != first

    for plugin in served:  # one after the other: each finds the channel in place
        await registration.register(request(plugin), second, DEADLINE_S)

    assert relay.connections == 2
    assert setup.kubelet.registrations == {p.resource: 2 for p in served}
    assert setup.kubelet.registered_resources() >= {p.resource for p in served}


async def test_a_call_that_found_no_kubelet_makes_the_next_one_dial_again(setup: Setup) -> None:
    """Without waiting out grpc's reconnect backoff, even when the new kubelet's socket looks
    like the old one (inode number and ctime can repeat)."""
    relay, registration, (one, two, *_) = setup.relay, setup.registration, setup.plugins
    kubelet = await relay.start()
    await registration.register(request(one), kubelet, DEADLINE_S)
    await relay.stop()
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await registration.register(request(two), kubelet, DEADLINE_S)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
    await relay.start()

    await registration.register(request(two), kubelet, DEADLINE_S)

    assert relay.connections == 2
    assert setup.kubelet.registrations == {one.resource: 1, two.resource: 1}
