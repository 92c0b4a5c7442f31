"""What a gRPC peer puts on the wire, read as HTTP/2 frames (RFC 9113 §4, §6).

`unary_frames` makes one call as a bare client and returns the server's frames; `Tap` sits
between a client and a server's unix socket and keeps what the client sends. Tests use them to
check transport behaviour that no gRPC API shows, e.g. which side sends PING frames.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from pathlib import Path

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, PING = 0, 1, 4, 6
END_STREAM = ACK = 0x1
END_HEADERS = 0x4
HEADER_BYTES = 9


@dataclass(frozen=True)
class Frame:
    kind: int
    flags: int
    stream: int
    payload: bytes

    @property
    def ping(self) -> bool:
        """A PING asking for an answer (not the answer to one)."""
        return self.kind == PING and not self.flags & ACK


def encode(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
    )


def decode(data: bytes) -> tuple[list[Frame], bytes]:
    """The whole frames at the start of `data`, and the bytes after them."""
    frames = []
    while len(data) >= HEADER_BYTES:
        end = HEADER_BYTES + int.from_bytes(data[:3], "big")
        if len(data) < end:
            break
        stream = int.from_bytes(data[5:9], "big") & 0x7FFFFFFF
        frames.append(Frame(data[3], data[4], stream, data[HEADER_BYTES:end]))
        data = data[end:]
    return frames, data


def _literal(name: str, value: str) -> bytes:
    """An HPACK literal header field without indexing, no Huffman coding (RFC 7541 §6.2.2)."""
    raw_name, raw_value = name.encode(), value.encode()
    return bytes([0, len(raw_name)]) + raw_name + bytes([len(raw_value)]) + raw_value


async def unary_frames(socket: Path, method: str) -> list[Frame]:
    """Call `method` with an empty message over a connection of our own; the server's frames
    until the call's trailers. SETTINGS and PINGs are answered, as any client must."""
    reader, writer = await asyncio.open_unix_connection(socket)
    headers = b"".join(
        _literal(name, value)
        for name, value in [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", method),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        ]
    )
    empty_message = bytes(5)  # not compressed, length 0
    writer.write(
        PREFACE
        + encode(SETTINGS, 0, 0)
        + encode(HEADERS, END_HEADERS, 1, headers)
        + encode(DATA, END_STREAM, 1, empty_message)
    )
    received: list[Frame] = []
    pending = b""
    try:
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                raise ConnectionError(f"{socket} hung up before the call ended")
            frames, pending = decode(pending + chunk)
            for frame in frames:
                received.append(frame)
                if frame.kind == SETTINGS and not frame.flags & ACK:
                    writer.write(encode(SETTINGS, ACK, 0))
                elif frame.ping:
                    writer.write(encode(PING, ACK, 0, frame.payload))
                elif frame.kind == HEADERS and frame.stream == 1 and frame.flags & END_STREAM:
                    return received
    finally:
        writer.close()


class Tap:
    """A unix socket at `path` that passes every connection on to `target`, keeping the bytes
    the connecting side sent."""

    def __init__(self, path: Path, target: Path) -> None:
        self.path = path
        self.target = target
        self.sent = bytearray()
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    def client_frames(self) -> list[Frame]:
        """The connecting side's frames so far (one connection)."""
        assert self.sent.startswith(PREFACE), "not an HTTP/2 client connection"
        return decode(bytes(self.sent[len(PREFACE) :]))[0]

    async def __aenter__(self) -> Tap:
        self._server = await asyncio.start_unix_server(self._pass_on, path=self.path)
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        self.path.unlink(missing_ok=True)

    async def _pass_on(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(self.target)
        self._writers += [writer, up_writer]
        await asyncio.gather(
            self._copy(reader, up_writer, self.sent), self._copy(up_reader, writer)
        )

    @staticmethod
    async def _copy(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, keep: bytearray | None = None
    ) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                if keep is not None:
                    keep += data
                writer.write(data)
                await writer.drain()
        writer.close()
