"""The kubelet emulator's plugin watcher and DRA plugin registration, against fake plugins
serving `pluginregistration.Registration` on real sockets in plugins_registry."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from akri.proto.pluginregistration.v1 import api_pb2 as pb
from akri.proto.pluginregistration.v1.api_pb2_grpc import (
    RegistrationServicer,
    add_RegistrationServicer_to_server,
)
from akri.sim.kubelet import Kubelet
from tests.support import eventually

DRIVER = "x.example.com"


class FakeRegistration(RegistrationServicer):
    def __init__(self, info: pb.PluginInfo) -> None:
        self.info = info
        self.asked = 0
        self.statuses: list[tuple[bool, str]] = []

    async def GetInfo(
        self, request: pb.InfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.PluginInfo:
        self.asked += 1
        return self.info

    async def NotifyRegistrationStatus(
        self, request: pb.RegistrationStatus, context: grpc.aio.ServicerContext[Any, Any]
    ) -> pb.RegistrationStatusResponse:
        self.statuses.append((request.plugin_registered, request.error))
        return pb.RegistrationStatusResponse()


Serve = Callable[[str, str, Sequence[str]], "asyncio.Future[FakeRegistration]"]


@pytest.fixture
async def kubelet(make_kubelet: Callable[..., Kubelet], socket_dir: Path) -> AsyncIterator[Kubelet]:
    async with make_kubelet(plugins_registry_dir=socket_dir / "registry") as running:
        yield running


@pytest.fixture
async def serve(kubelet: Kubelet) -> AsyncIterator[Callable[..., Any]]:
    servers: list[grpc.aio.Server] = []

    async def start(name: str, kind: str, versions: Sequence[str]) -> FakeRegistration:
        assert kubelet.plugins_registry_dir is not None
        fake = FakeRegistration(
            pb.PluginInfo(type=kind, name=DRIVER, endpoint="", supported_versions=versions)
        )
        server = grpc.aio.server()
        add_RegistrationServicer_to_server(fake, server)
        server.add_insecure_port(f"unix://{kubelet.plugins_registry_dir / name}")
        await server.start()
        servers.append(server)
        return fake

    yield start
    while servers:  # emptied: the fixture's value (`start`) outlives this teardown
        await servers.pop().stop(grace=None)


@pytest.mark.parametrize(
    ("kind", "versions", "refusal"),
    [
        ("FooPlugin", ["v1.DRAPlugin"], "no handler registered for plugin type: FooPlugin"),
        ("DRAPlugin", [], "empty list of supported gRPC services"),
        ("DRAPlugin", ["v1beta1.DRAPlugin"], "offers none of the services"),
    ],
)
async def test_a_plugin_the_kubelet_cannot_take_is_told_why(
    kubelet: Kubelet, serve: Callable[..., Any], kind: str, versions: list[str], refusal: str
) -> None:
    fake = await serve("bad.sock", kind, versions)
    await eventually(lambda: fake.statuses, "the kubelet's verdict")
    registered, error = fake.statuses[0]
    assert not registered
    assert refusal in error
    assert kubelet.dra.drivers() == set()


async def test_a_dra_plugin_registers_and_leaves_with_its_socket(
    kubelet: Kubelet, serve: Callable[..., Any]
) -> None:
    """Hidden sockets are ignored; an empty endpoint means the registration socket itself;
    the socket's removal deregisters the plugin."""
    hidden = await serve(".hidden.sock", "DRAPlugin", ["v1.DRAPlugin"])
    fake = await serve("x.sock", "DRAPlugin", ["v1.DRAPlugin", "v1alpha1.DRAResourceHealth"])
    await eventually(lambda: fake.statuses == [(True, "")], "the plugin to be registered")
    assert kubelet.dra.drivers() == {DRIVER}
    assert hidden.asked == 0
    assert kubelet.plugins_registry_dir is not None
    (kubelet.plugins_registry_dir / "x.sock").unlink()
    await eventually(lambda: kubelet.dra.drivers() == set(), "the plugin to be deregistered")
    assert fake.asked == 1
