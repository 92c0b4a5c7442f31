"""The kubelet's gRPC client of one registered device plugin.

Dials the plugin's socket, reads its options, keeps its ListAndWatch stream and makes the
admission calls. Once the stream ends the endpoint is stopped for good: the kubelet never
calls ListAndWatch again, only a new Register brings the resource back.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import grpc

from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    ContainerAllocateRequest,
    ContainerAllocateResponse,
    ContainerPreferredAllocationRequest,
    DevicePluginOptions,
    Empty,
    ListAndWatchResponse,
    PreferredAllocationRequest,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.kubelet import rpc
from akri.sim.kubelet.model import AllocationError, RegistrationError
from akri.unix_sockets import LOCAL_PEER_OPTIONS

if TYPE_CHECKING:  # the async stub type exists only in the generated typing stubs
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

log = logging.getLogger(__name__)

DevicesCallback = Callable[[ListAndWatchResponse], None]
T = TypeVar("T")


class StoppedEndpoint:
    """Stands for a resource restored from the checkpoint that no plugin has re-registered."""

    def __init__(self, resource: str) -> None:
        self.resource = resource

    @property
    def stopped(self) -> bool:
        return True

    @property
    def preferred_allocation_available(self) -> bool:
        return False

    async def preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> Sequence[str]:
        raise AllocationError(f"endpoint {self.resource} has been stopped")

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocateResponse:
        raise AllocationError(f"endpoint {self.resource} has been stopped")

    async def close(self) -> None:
        """Nothing to release."""


class PluginEndpoint:
    """A live connection to a plugin; stopped once its ListAndWatch stream ends."""

    def __init__(
        self,
        resource: str,
        channel: grpc.aio.Channel,
        stub: DevicePluginAsyncStub,
        options: DevicePluginOptions,
        call_timeout: float | None,
    ) -> None:
        self.resource = resource
        self.options = options
        self._channel = channel
        self._stub = stub
        self._call_timeout = call_timeout
        self._watch: asyncio.Task[None] | None = None
        self._stopped = False

    @classmethod
    async def connect(
        cls, resource: str, socket: Path, *, dial_timeout: float, call_timeout: float | None
    ) -> PluginEndpoint:
        """Dial like the kubelet (blocking, bounded) and fetch the plugin's options."""
        channel = grpc.aio.insecure_channel(f"unix://{socket}", options=LOCAL_PEER_OPTIONS)
        try:
            try:
                async with asyncio.timeout(dial_timeout):
                    await channel.channel_ready()
            except TimeoutError:
                raise RegistrationError(f"failed to dial device plugin: {socket}") from None
            stub: DevicePluginAsyncStub = DevicePluginStub(channel)
            try:
                options = await stub.GetDevicePluginOptions(Empty(), timeout=call_timeout)
            except grpc.aio.AioRpcError as error:
                raise RegistrationError(
                    f"failed to get device plugin options: {error.details()}"
                ) from None
        except BaseException:
            await channel.close()
            raise
        return cls(resource, channel, stub, options, call_timeout)

    @property
    def stopped(self) -> bool:
        return self._stopped

    @property
    def preferred_allocation_available(self) -> bool:
        return self.options.get_preferred_allocation_available

    def watch(self, on_devices: DevicesCallback, on_end: Callable[[], None]) -> None:
        """Open ListAndWatch once; `on_end` runs when the stream ends (not when closed)."""
        self._watch = asyncio.create_task(
            self._run_watch(on_devices, on_end), name=f"kubelet-listandwatch-{self.resource}"
        )

    async def _run_watch(self, on_devices: DevicesCallback, on_end: Callable[[], None]) -> None:
        try:
            async for response in self._stub.ListAndWatch(Empty()):
                on_devices(response)
            log.warning("ListAndWatch of %s ended", self.resource)
        except grpc.aio.AioRpcError as error:
            # A plugin that stops (its Configuration or Instance deleted, its agent stopping)
            # cancels its calls: expected, not news; any other end is.
            expected = error.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
            log.log(
                logging.INFO if expected else logging.WARNING,
                "ListAndWatch of %s ended: %s",
                self.resource,
                error.details(),
            )
        self._stopped = True
        on_end()

    async def preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> Sequence[str]:
        request = PreferredAllocationRequest(
            container_requests=[
                ContainerPreferredAllocationRequest(
                    available_deviceIDs=available,
                    must_include_deviceIDs=must_include,
                    allocation_size=size,
                )
            ]
        )
        self._refuse_if_stopped()
        response = await self._call(
            "GetPreferredAllocation",
            self._stub.GetPreferredAllocation(request, timeout=self._call_timeout),
        )
        if not response.container_responses:
            return ()
        return tuple(response.container_responses[0].deviceIDs)

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocateResponse:
        request = AllocateRequest(
            container_requests=[ContainerAllocateRequest(devices_ids=device_ids)]
        )
        self._refuse_if_stopped()
        response = await self._call(
            "Allocate", self._stub.Allocate(request, timeout=self._call_timeout)
        )
        if not response.container_responses:
            raise AllocationError(f"no containers return in allocation response {response}")
        return response.container_responses[0]

    async def close(self) -> None:
        """Cancel the stream (the plugin sees it end) and hang up; no `on_end` call."""
        self._stopped = True
        if self._watch is not None:
            self._watch.cancel()
            await asyncio.gather(self._watch, return_exceptions=True)
        await self._channel.close()

    async def _call(self, method: str, call: Awaitable[T]) -> T:
        """An admission call; every way it fails is an AllocationError (`close` cuts calls
        in flight)."""
        try:
            return await rpc.answer(call)
        except grpc.aio.AioRpcError as error:
            raise AllocationError(_rpc_failure(method, error)) from None
        except rpc.ChannelClosed:
            raise AllocationError(f"{method} failed: endpoint {self.resource} stopped") from None

    def _refuse_if_stopped(self) -> None:
        if self._stopped:
            raise AllocationError(f"endpoint {self.resource} has been stopped")


def _rpc_failure(method: str, error: grpc.aio.AioRpcError) -> str:
    return f"{method} failed: {error.code().name}: {error.details()}"
