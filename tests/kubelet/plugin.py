"""A scriptable device plugin for kubelet-emulator tests: real grpc.aio server, real socket.

Tests set its devices and answers, then read what the kubelet asked. `follow_kubelet` makes it
behave like a real plugin across kubelet restarts: when its socket is deleted it serves a new
one and registers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import grpc

from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    AllocateResponse,
    ContainerAllocateResponse,
    ContainerPreferredAllocationRequest,
    ContainerPreferredAllocationResponse,
    Device,
    DevicePluginOptions,
    DeviceSpec,
    Empty,
    ListAndWatchResponse,
    Mount,
    NUMANode,
    PreferredAllocationRequest,
    PreferredAllocationResponse,
    PreStartContainerRequest,
    PreStartContainerResponse,
    RegisterRequest,
    TopologyInfo,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import (
    DevicePluginServicer,
    RegistrationStub,
    add_DevicePluginServicer_to_server,
)
from akri.proto.deviceplugin.v1beta1.constants import HEALTHY, UNHEALTHY, VERSION
from akri.sim.kubelet.changes import Changes

_nonce = itertools.count()
SOCKET_POLL_S = 0.01
"""How often a following plugin stats its socket (real plugins poll every second)."""


def device(device_id: str, healthy: bool = True, numa: Sequence[int] = ()) -> Device:
    topology = TopologyInfo(nodes=[NUMANode(ID=n) for n in numa]) if numa else None
    return Device(ID=device_id, health=HEALTHY if healthy else UNHEALTHY, topology=topology)


def answer(device_ids: Sequence[str]) -> ContainerAllocateResponse:
    """What the fake returns from Allocate: ids visible in env, a mount and a device node."""
    return ContainerAllocateResponse(
        envs={"DEVICES": ",".join(device_ids)},
        mounts=[Mount(container_path="/cfg", host_path="/tmp/cfg", read_only=True)],
        devices=[
            DeviceSpec(container_path=f"/dev/{i}", host_path=f"/dev/{i}", permissions="rw")
            for i in device_ids
        ],
        annotations={"fake": "yes"},
    )


class FakePlugin(DevicePluginServicer):
    def __init__(
        self,
        directory: Path,
        resource: str,
        devices: Sequence[Device] = (),
        *,
        preferred: Callable[[ContainerPreferredAllocationRequest], Sequence[str]] | None = None,
    ) -> None:
        self.directory = directory
        self.resource = resource
        self.devices = list(devices)
        self.preferred = preferred
        self.allocate_error: grpc.StatusCode | None = None
        self.allocate_hangs = False
        self.allocate_requests: list[list[str]] = []
        self.preferred_requests: list[ContainerPreferredAllocationRequest] = []
        self.streams_opened = 0
        self.streams_closed = 0
        self.changes = Changes()
        self.socket = directory / "unset.sock"
        self._server: grpc.aio.Server | None = None
        self._end_streams = False
        self._follower: asyncio.Task[None] | None = None

    # --- lifecycle -------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve on a fresh socket name, as plugins do (a nonce avoids stale-socket clashes)."""
        await self._stop_server()
        self._end_streams = False
        name = self.resource.replace("/", "_").replace(".", "_")
        self.socket = self.directory / f"{name}-{next(_nonce)}.sock"
        self._server = grpc.aio.server()
        add_DevicePluginServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{self.socket}")
        await self._server.start()

    async def register(self, kubelet_socket: Path, **overrides: Any) -> None:
        fields: dict[str, Any] = {
            "version": VERSION,
            "endpoint": self.socket.name,
            "resource_name": self.resource,
            "options": DevicePluginOptions(
                get_preferred_allocation_available=self.preferred is not None
            ),
        }
        fields.update(overrides)
        async with grpc.aio.insecure_channel(f"unix://{kubelet_socket}") as channel:
            await RegistrationStub(channel).Register(RegisterRequest(**fields), timeout=10)

    async def start(self, kubelet_socket: Path) -> None:
        await self.serve()
        await self.register(kubelet_socket)

    def follow_kubelet(self, kubelet_socket: Path) -> None:
        """Re-serve and re-register whenever the kubelet deletes our socket (its restart)."""
        self._follower = asyncio.create_task(self._follow(kubelet_socket), name="fake-follow")

    async def _follow(self, kubelet_socket: Path) -> None:
        while True:
            await asyncio.sleep(SOCKET_POLL_S)
            if not self._kubelet_restarted(kubelet_socket):
                continue
            await self.serve()
            with contextlib.suppress(grpc.aio.AioRpcError):  # kubelet still starting: retry
                await self.register(kubelet_socket)

    def _kubelet_restarted(self, kubelet_socket: Path) -> bool:
        """Our socket is gone and a new kubelet.sock is there: time to register again."""
        return not self.socket.exists() and kubelet_socket.exists()

    async def stop(self) -> None:
        if self._follower is not None:
            self._follower.cancel()
            await asyncio.gather(self._follower, return_exceptions=True)
        await self._stop_server()

    async def _stop_server(self) -> None:
        if self._server is not None:
            self.end_streams()
            await self._server.stop(grace=None)
            self._server = None

    # --- scripting -------------------------------------------------------------------------

    def set_devices(self, devices: Sequence[Device]) -> None:
        self.devices = list(devices)
        self.changes.notify()

    def end_streams(self) -> None:
        """Return from every ListAndWatch: the kubelet sees the stream end cleanly."""
        self._end_streams = True
        self.changes.notify()

    # --- DevicePlugin service --------------------------------------------------------------

    async def GetDevicePluginOptions(
        self, request: Empty, context: grpc.aio.ServicerContext[Any, Any]
    ) -> DevicePluginOptions:
        return DevicePluginOptions(get_preferred_allocation_available=self.preferred is not None)

    async def ListAndWatch(
        self, request: Empty, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AsyncIterator[ListAndWatchResponse]:
        self.streams_opened += 1
        self.changes.notify()
        sent: list[Device] | None = None
        try:
            while not self._end_streams:
                if sent != self.devices:
                    sent = list(self.devices)
                    yield ListAndWatchResponse(devices=sent)
                await self.changes.wait_for(functools.partial(self._outdated, sent))
        finally:
            self.streams_closed += 1
            self.changes.notify()

    def _outdated(self, sent: list[Device]) -> bool:
        return sent != self.devices or self._end_streams

    async def GetPreferredAllocation(
        self, request: PreferredAllocationRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> PreferredAllocationResponse:
        assert self.preferred is not None, "kubelet asked although the options said no"
        responses = []
        for container in request.container_requests:
            self.preferred_requests.append(container)
            ids = self.preferred(container)
            responses.append(ContainerPreferredAllocationResponse(deviceIDs=ids))
        return PreferredAllocationResponse(container_responses=responses)

    async def Allocate(
        self, request: AllocateRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> AllocateResponse:
        self.allocate_requests.extend(list(c.devices_ids) for c in request.container_requests)
        self.changes.notify()
        if self.allocate_hangs:
            await asyncio.Event().wait()
        if self.allocate_error is not None:
            await context.abort(self.allocate_error, "device on fire")
        return AllocateResponse(
            container_responses=[answer(c.devices_ids) for c in request.container_requests]
        )

    async def PreStartContainer(
        self, request: PreStartContainerRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> PreStartContainerResponse:
        return PreStartContainerResponse()
