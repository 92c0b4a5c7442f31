"""What a plugin server puts on the wire, read as HTTP/2 frames."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from akri.agent.plugins.server import OPTIONS, PluginServer, generic_handlers
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    ContainerAllocateRequest,
    ContainerPreferredAllocationRequest,
    Empty,
    ListAndWatchResponse,
    PreferredAllocationRequest,
    PreStartContainerRequest,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from tests.http2 import DATA, unary_frames
from tests.kubelet.plugin import FakePlugin, device

RESOURCE = "akri.sh/probe"


async def test_a_plugin_server_sends_no_bandwidth_probes(socket_dir: Path) -> None:
    """A thousand of them answer the kubelet at once after a restart; a probe's PING and its
    answer would cost both sides on every connection."""
    servicer = FakePlugin(socket_dir, RESOURCE)
    server = PluginServer(generic_handlers(servicer), socket_dir, RESOURCE, OPTIONS)
    await server.start()
    try:
        frames = await unary_frames(server.socket, "/v1beta1.DevicePlugin/GetDevicePluginOptions")
    finally:
        await server.stop()
    assert any(frame.kind == DATA for frame in frames), "no answer"
    assert not [frame for frame in frames if frame.ping]


async def test_a_plugin_server_serves_each_method_of_its_own_servicer(socket_dir: Path) -> None:
    """The server's handler is made at each call from the servicer's own methods; a method
    the service lacks is UNIMPLEMENTED."""
    servicer = FakePlugin(
        socket_dir, RESOURCE, [device("d0")], preferred=lambda wanted: wanted.available_deviceIDs
    )
    server = PluginServer(generic_handlers(servicer), socket_dir, RESOURCE, OPTIONS)
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"unix://{server.socket}") as channel:
            stub = DevicePluginStub(channel)
            options = await stub.GetDevicePluginOptions(Empty())
            stream = stub.ListAndWatch(Empty())
            listed = await stream.read()
            stream.cancel()
            preferred = await stub.GetPreferredAllocation(
                PreferredAllocationRequest(
                    container_requests=[
                        ContainerPreferredAllocationRequest(
                            available_deviceIDs=["d0"], allocation_size=1
                        )
                    ]
                )
            )
            allocated = await stub.Allocate(
                AllocateRequest(container_requests=[ContainerAllocateRequest(devices_ids=["d0"])])
            )
            await stub.PreStartContainer(PreStartContainerRequest(devices_ids=["d0"]))
            missing = channel.unary_unary(
                "/v1beta1.DevicePlugin/Missing",
                request_serializer=Empty.SerializeToString,
                response_deserializer=Empty.FromString,
            )
            with pytest.raises(grpc.aio.AioRpcError) as unknown:
                await missing(Empty())
    finally:
        await server.stop()
    assert options.get_preferred_allocation_available
    assert isinstance(listed, ListAndWatchResponse)
    assert [d.ID for d in listed.devices] == ["d0"]
    assert list(preferred.container_responses[0].deviceIDs) == ["d0"]
    assert servicer.allocate_requests == [["d0"]]
    assert allocated.container_responses[0].envs == {"DEVICES": "d0"}
    assert unknown.value.code() == grpc.StatusCode.UNIMPLEMENTED
