"""Issue 25: an agent restarted with its Instances in place serves them before discovery has
reported again. An Allocate in that window must carry the device's nodes and mounts (once
discovery reports them) or fail naming the device; it never admits a container without them.

Whole agents (discovery, plugins) against the API emulator and the kubelet emulator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.discovery.model import Device, DeviceSpec, Mount
from akri.sim.kubelet import AdmissionError, Container, Kubelet
from tests.agent.running_agents import Api, configuration, running_agent
from tests.discovery.scripted import Scripted
from tests.support import eventually

NODE = "node-a"
DEADLINE_S = 30.0
CAMERA = Device(
    "cam",
    {"URL": "rtsp://cam"},
    mounts=(Mount("/data", "/host/data", read_only=True),),
    device_specs=(DeviceSpec("/dev/video0", "/dev/video3", "rw"),),
)
INSTANCE = naming.instance_name("cfg", "cam", NODE)
RESOURCE = naming.resource_name(INSTANCE)
ALLOWED = (Path("/host"),)


def offered(kubelet: Kubelet) -> int:
    status = kubelet.resources().get(RESOURCE)
    return status.allocatable if status is not None and status.registered else 0


def app() -> list[Container]:
    return [Container("app", {RESOURCE: 1})]


@contextlib.asynccontextmanager
async def restarted(
    api: client.ApiClient, socket_dir: Path, **settings: Any
) -> AsyncIterator[tuple[Kubelet, Scripted]]:
    """The camera's Instance published by a first agent; a second agent on the same node whose
    discovery has not reported yet, serving it to a running kubelet."""
    first = Scripted(shared=False)
    async with running_agent(api, socket_dir, NODE, handlers=[first], allowed_mount_paths=ALLOWED):
        await Api(api).apply(configuration(handler=first.name))
        first.feed.put_nowait([CAMERA])
        await eventually(lambda: Api(api).nodes_of(INSTANCE, [NODE]), "the camera's Instance")
    root = socket_dir / NODE
    kubelet = Kubelet(NODE, root / "dp", root / "pr", call_timeout=DEADLINE_S)
    await kubelet.start()
    try:
        again = Scripted(shared=False)
        async with running_agent(
            api, socket_dir, NODE, handlers=[again], allowed_mount_paths=ALLOWED, **settings
        ):
            async with asyncio.timeout(DEADLINE_S):
                await kubelet.wait_for(lambda: offered(kubelet) == 2)  # both slots listed
            yield kubelet, again
    finally:
        await kubelet.stop()


async def test_an_allocate_before_rediscovery_is_refused_naming_the_device(
    api: client.ApiClient, socket_dir: Path
) -> None:
    async with restarted(api, socket_dir, rediscovery_wait=0.1) as (kubelet, _):
        with pytest.raises(AdmissionError) as refused:
            await kubelet.admit("pod", "pod", "default", containers=app())
    assert INSTANCE in refused.value.message
    assert "not been discovered on this node" in refused.value.message


async def test_an_allocate_waits_for_rediscovery_and_carries_the_device_nodes_and_mounts(
    api: client.ApiClient, socket_dir: Path
) -> None:
    async with restarted(
        api, socket_dir, rediscovery_wait=DEADLINE_S / 2, allocate_timeout=DEADLINE_S
    ) as (kubelet, discovery):
        admitting = asyncio.create_task(kubelet.admit("pod", "pod", "default", containers=app()))
        discovery.feed.put_nowait([CAMERA])  # while (or before) the Allocate waits
        pod = await admitting
    response = pod.allocations["app"][RESOURCE].response
    assert [(m.container_path, m.host_path, m.read_only) for m in response.mounts] == [
        ("/data", "/host/data", True)
    ]
    assert [(d.container_path, d.host_path, d.permissions) for d in response.devices] == [
        ("/dev/video0", "/dev/video3", "rw")
    ]
