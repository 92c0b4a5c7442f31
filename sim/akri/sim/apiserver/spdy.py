"""`kubectl port-forward` as kubectl >= 1.31 speaks it: SPDY/3.1 tunnelled in a WebSocket.

The WebSocket (subprotocol `SPDY/3.1+portforward.k8s.io`) carries a byte stream of SPDY/3
frames. For each forwarded connection kubectl opens two streams named by their headers
(`streamType` `error` or `data`, `port`, `requestID`); once both are there the server connects
to the pod's port and copies bytes between the data stream and the connection, and reports a
failure to connect on the error stream, as the kubelet does. Header blocks are zlib-compressed
with the dictionary SPDY/3 defines (one compression context per direction).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

log = logging.getLogger(__name__)

TUNNEL_PROTOCOL = "SPDY/3.1+portforward.k8s.io"
VERSION = 3
SYN_STREAM, SYN_REPLY, RST_STREAM, PING, GOAWAY = 1, 2, 3, 6, 7
FLAG_FIN = 0x01
RST_CANCEL = 5
_CHUNK = 32 * 1024

_WORDS = [
    *"""options head post put delete trace accept accept-charset accept-encoding accept-language
    accept-ranges age allow authorization cache-control connection content-base content-encoding
    content-language content-length content-location content-md5 content-range content-type date
    etag expect expires from host if-match if-modified-since if-none-match if-range
    if-unmodified-since last-modified location max-forwards pragma proxy-authenticate
    proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade
    user-agent vary via warning www-authenticate method get status""".split(),  # noqa: SIM905
    *("200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"),
]
_TAIL = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request"
    "401 Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented"
    "503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 "
    "Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()
"""The header compression dictionary of SPDY/3 (section 2.6.10.1 of its draft)."""


def control(kind: int, flags: int, body: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, kind, (flags << 24) | len(body)) + body


def data(stream: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">II", stream & 0x7FFFFFFF, (flags << 24) | len(payload)) + payload


class Headers:
    """One direction's header-block codec (SPDY keeps one zlib stream per direction)."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zdict=DICTIONARY)
        self._deflate = zlib.compressobj(zdict=DICTIONARY)

    def decode(self, block: bytes) -> dict[str, str]:
        raw = self._inflate.decompress(block)
        (count,), offset, headers = struct.unpack_from(">I", raw), 4, {}
        for _ in range(count):
            (length,) = struct.unpack_from(">I", raw, offset)
            name = raw[offset + 4 : offset + 4 + length].decode().lower()
            offset += 4 + length
            (length,) = struct.unpack_from(">I", raw, offset)
            headers[name] = raw[offset + 4 : offset + 4 + length].decode().split("\0")[0]
            offset += 4 + length
        return headers

    def encode(self, headers: dict[str, str]) -> bytes:
        raw = struct.pack(">I", len(headers)) + b"".join(
            struct.pack(">I", len(k)) + k.encode() + struct.pack(">I", len(v)) + v.encode()
            for k, v in headers.items()
        )
        return self._deflate.compress(raw) + self._deflate.flush(zlib.Z_SYNC_FLUSH)


@dataclass
class _Pair:
    """The error and data streams of one forwarded connection."""

    port: int = 0
    error: int = 0
    data: int = 0
    writer: asyncio.StreamWriter | None = None
    connected: asyncio.Event = field(default_factory=asyncio.Event)


class PortForward:
    """Serves one `kubectl port-forward` session on an open WebSocket."""

    def __init__(self, socket: web.WebSocketResponse, host: str) -> None:
        self._socket = socket
        self._host = host
        self._headers = Headers()
        self._pairs: dict[str, _Pair] = {}
        self._by_stream: dict[int, _Pair] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._send_lock = asyncio.Lock()

    async def run(self) -> None:
        buffer = b""
        try:
            async for message in self._socket:
                if message.type != aiohttp.WSMsgType.BINARY:
                    continue
                buffer += message.data
                while len(buffer) >= 8:
                    length = int.from_bytes(buffer[5:8], "big")
                    if len(buffer) < 8 + length:
                        break
                    frame, buffer = buffer[: 8 + length], buffer[8 + length :]
                    await self._frame(frame)
        finally:
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for pair in self._pairs.values():
                if pair.writer is not None:
                    pair.writer.close()

    async def _send(self, frame: bytes) -> None:
        async with self._send_lock:
            if not self._socket.closed:
                await self._socket.send_bytes(frame)

    async def _frame(self, frame: bytes) -> None:
        flags, body = frame[4], frame[8:]
        if not frame[0] & 0x80:
            stream = int.from_bytes(frame[0:4], "big") & 0x7FFFFFFF
            await self._stream_data(stream, flags, body)
            return
        kind = int.from_bytes(frame[2:4], "big")
        if kind == SYN_STREAM:
            stream = int.from_bytes(body[0:4], "big") & 0x7FFFFFFF
            await self._open(stream, self._headers.decode(body[10:]))
        elif kind == RST_STREAM:
            pair = self._by_stream.get(int.from_bytes(body[0:4], "big") & 0x7FFFFFFF)
            if pair is not None and pair.writer is not None:
                pair.writer.close()
        elif kind == PING:
            await self._send(control(PING, 0, body))

    async def _open(self, stream: int, headers: dict[str, str]) -> None:
        """Accept a stream; connect once both streams of its request are open."""
        reply = struct.pack(">I", stream) + self._headers.encode({})
        await self._send(control(SYN_REPLY, 0, reply))
        request = headers.get("requestid", "")
        pair = self._pairs.setdefault(request, _Pair())
        pair.port = int(headers.get("port", "0") or 0)
        self._by_stream[stream] = pair
        if headers.get("streamtype") == "error":
            pair.error = stream
        else:
            pair.data = stream
        if pair.error and pair.data:
            self._spawn(self._connect(pair))

    def _spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _connect(self, pair: _Pair) -> None:
        try:
            reader, pair.writer = await asyncio.open_connection(self._host, pair.port)
        except OSError as error:
            message = (
                f"error forwarding port {pair.port} to pod {self._host}: "
                f"failed to connect to {self._host}:{pair.port}: {error}"
            )
            await self._send(data(pair.error, FLAG_FIN, message.encode()))
            return
        finally:
            pair.connected.set()
        try:
            while chunk := await reader.read(_CHUNK):
                await self._send(data(pair.data, 0, chunk))
        except OSError:
            pass
        await self._send(data(pair.data, FLAG_FIN, b""))
        await self._send(data(pair.error, FLAG_FIN, b""))

    async def _stream_data(self, stream: int, flags: int, payload: bytes) -> None:
        pair = self._by_stream.get(stream)
        if pair is None or stream != pair.data:
            return  # the client closing its side of the error stream
        await pair.connected.wait()
        if pair.writer is None or pair.writer.is_closing():
            return
        if payload:
            pair.writer.write(payload)
            with contextlib.suppress(ConnectionError):
                await pair.writer.drain()
        if flags & FLAG_FIN and pair.writer.can_write_eof():
            with contextlib.suppress(OSError):
                pair.writer.write_eof()
