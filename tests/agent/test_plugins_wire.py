"""What a plugin server puts on the wire, read as HTTP/2 frames."""

from __future__ import annotations

from pathlib import Path

from akri.agent.plugins.server import OPTIONS, PluginServer, generic_handlers
from tests.http2 import DATA, unary_frames
from tests.kubelet.plugin import FakePlugin

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
