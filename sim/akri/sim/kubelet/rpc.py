"""How the kubelet emulator awaits a call on a plugin's gRPC channel.

Closing a channel (the plugin's socket went, the kubelet stops) cancels the calls in flight on
it, and grpc.aio reports each as a CancelledError in the awaiting task. That is the call
failing, as the kubelet sees a cancelled RPC, not the task being cancelled: passed on, it would
end whatever loop made the call (the node's bridge, its pod sync).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class ChannelClosed(Exception):
    """The call's channel was closed while the call was in flight."""


async def answer(call: Awaitable[T]) -> T:
    """`await call`; ChannelClosed when its channel closed under it. The awaiting task's own
    cancellation stays a CancelledError."""
    try:
        return await call
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise ChannelClosed from None
