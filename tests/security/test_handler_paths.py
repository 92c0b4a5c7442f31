"""Attack: an external discovery handler asks for host paths for broker containers.

The handler is any process that can reach the agent's registration socket; what it asks for
goes to the kubelet, which mounts it into broker pods that no admission control sees. Over the
real discovery gRPC protocol, against a real agent and the API emulator: devices asking for a
mount outside the allowed directories, or a device node outside /dev (by `..` or a symlink),
are left out, the Configuration names the path, and an honest device is still published.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from akri.discovery.model import Device, DeviceSpec, Mount
from akri.discovery.server import HandlerServer
from akri.naming import instance_name
from tests.agent.running_agents import Api, configuration, running_agent
from tests.discovery.conftest import fast_backoff
from tests.support import eventually

NODE = "node-h"

# An attack on the node: made against the emulator even when a real cluster is given.
pytestmark = pytest.mark.node_side


class Greedy:
    """A handler whose devices ask for whatever it was given."""

    name = "greedy"
    shared = False

    def __init__(self, devices: list[Device]) -> None:
        self.devices = devices

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        yield self.devices
        await asyncio.Event().wait()


async def published(k: Api, config: str, device: str) -> bool:
    return await k.instance(instance_name(config, device, NODE)) is not None


async def refused_paths(api: client.ApiClient, socket_dir: Path, devices: list[Device]) -> str:
    """The RefusedHostPath message once the honest device `ok` is published."""
    k = Api(api)
    async with (
        running_agent(api, socket_dir, NODE, handlers=[], allowed_mount_paths=(socket_dir / "ok",)),
        HandlerServer(Greedy(devices), socket_dir / NODE, backoff=fast_backoff),
    ):
        await k.apply(configuration("paths", handler="greedy", details=""))
        await eventually(lambda: published(k, "paths", "ok"), "the honest device")
        condition = await eventually(
            lambda: k.condition("paths", "RefusedHostPath"), "the refused path"
        )
        instances = await k.instances()
    assert sorted(instances) == [instance_name("paths", "ok", NODE)]
    assert condition["status"] == "True"
    return str(condition["message"])


def honest(socket_dir: Path) -> Device:
    allowed = socket_dir / "ok"
    allowed.mkdir()
    return Device(
        "ok",
        mounts=(Mount("/data", str(allowed / "data"), read_only=True),),
        device_specs=(DeviceSpec("/dev/null", "/dev/null", "rw"),),
    )


async def test_a_mount_of_the_host_root_is_refused(api: client.ApiClient, socket_dir: Path) -> None:
    root = Device("root", mounts=(Mount("/host", "/", read_only=False),))
    message = await refused_paths(api, socket_dir, [honest(socket_dir), root])
    assert "device 'root': mount of host path '/' refused" in message


async def test_a_mount_escaping_the_allowed_directory_by_a_link_is_refused(
    api: client.ApiClient, socket_dir: Path
) -> None:
    good = honest(socket_dir)
    (socket_dir / "ok" / "etc").symlink_to("/etc")
    sneaky = Device("sneaky", mounts=(Mount("/e", str(socket_dir / "ok" / "etc"), True),))
    message = await refused_paths(api, socket_dir, [good, sneaky])
    assert f"mount of host path '{socket_dir}/ok/etc' refused" in message


async def test_device_nodes_outside_dev_are_refused(
    api: client.ApiClient, socket_dir: Path
) -> None:
    dotdot = Device("dotdot", device_specs=(DeviceSpec("/dev/x", "/dev/../etc/shadow", "rw"),))
    relative = Device("relative", device_specs=(DeviceSpec("/dev/y", "dev/sda", "rw"),))
    message = await refused_paths(api, socket_dir, [honest(socket_dir), dotdot, relative])
    assert message == (
        f"node {NODE}: device 'dotdot': device node '/dev/../etc/shadow' refused: it is not "
        "under /dev once links are followed (and 1 more devices)"
    )
