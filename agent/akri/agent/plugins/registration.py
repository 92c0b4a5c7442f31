"""One connection to the kubelet's Registration service, shared by every plugin of the node.

A thousand plugins register at once when the agent starts and after every kubelet restart;
a channel of their own would cost each of them a dial, an HTTP/2 handshake and a hang-up. The
shared channel belongs to one kubelet incarnation (the identity of kubelet.sock): a re-created
socket gets a new channel at once, and so does the next call after one that found no kubelet:
a channel that failed to connect waits out grpc's reconnect backoff (1 s, growing to minutes),
and a restarted kubelet's socket can look the same as the old one (a reused inode number, a
ctime within the same clock tick).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING

import grpc

from akri.agent.plugins.kubelet_watch import Identity
from akri.proto.deviceplugin.v1beta1.api_pb2 import RegisterRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import RegistrationStub

if TYPE_CHECKING:  # the async stub type exists only in the generated typing stubs
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import RegistrationAsyncStub


class KubeletRegistration:
    """Register calls to `socket`; `close()` when no plugin registers any more."""

    def __init__(self, socket: Path, grace_s: float) -> None:
        """`grace_s`: how long calls still running on a replaced channel may finish."""
        self.socket = socket
        self._grace_s = grace_s
        self._current: tuple[Identity, grpc.aio.Channel, RegistrationAsyncStub] | None = None
        self._closing: set[asyncio.Task[None]] = set()

    async def register(
        self, request: RegisterRequest, kubelet: Identity, deadline_s: float
    ) -> None:
        """Send Register to the kubelet whose socket has identity `kubelet`; raises
        grpc.aio.AioRpcError when refused or unreachable."""
        if self._current is None or self._current[0] != kubelet:
            self._replace((kubelet, *self._dial()))
        current = self._current
        assert current is not None
        try:
            await current[2].Register(request, timeout=deadline_s)
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.UNAVAILABLE and self._current is current:
                self._replace(None)  # no waiting out grpc's reconnect backoff either
            raise

    async def close(self) -> None:
        self._replace(None)
        await asyncio.gather(*self._closing)

    def _dial(self) -> tuple[grpc.aio.Channel, RegistrationAsyncStub]:
        # Its own subchannel: grpc would otherwise share the failed one of a channel still
        # closing, with its backoff.
        channel = grpc.aio.insecure_channel(
            f"unix://{self.socket}", options=[("grpc.use_local_subchannel_pool", 1)]
        )
        stub: RegistrationAsyncStub = RegistrationStub(channel)
        return channel, stub

    def _replace(
        self, new: tuple[Identity, grpc.aio.Channel, RegistrationAsyncStub] | None
    ) -> None:
        """Make `new` current; the previous channel closes once its calls end (or the grace)."""
        old, self._current = self._current, new
        if old is not None:
            task = asyncio.create_task(old[1].close(grace=self._grace_s))
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)
