"""Real asyncua servers on loopback for the opcua handler's tests: plain servers, a discovery
server (LDS) they register with, and servers whose answers are hostile."""

from __future__ import annotations

import atexit
import shutil
import socket
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from asyncua import ua
from asyncua.server.server import Server

_shelf: Path | None = None


async def _address_space() -> Path:
    """A shelf of the standard address space, made once per test run.

    Loading the standard address space costs a server 4 s of CPU (25 s on a busy machine); from
    the shelf it loads lazily in a fraction of that. asyncua looks for the shelf at its bare path
    or with `.db`, while the dbm Python falls back to writes `.dat`/`.dir`: an empty file at the
    bare path lets asyncua find it.
    """
    global _shelf
    if _shelf is None:
        folder = Path(tempfile.mkdtemp(prefix="akri-opcua-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        shelf = folder / "address-space"
        await Server().init(shelf)
        shelf.touch()
        _shelf = shelf
    return _shelf


def free_tcp_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def lan_address() -> str | None:
    """An IPv4 address of this machine besides loopback, where a peer plays a host on the LAN
    (None when the machine has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # sends nothing: only picks the route's address
        except OSError:
            return None
        address: str = probe.getsockname()[0]
    return None if address.startswith("127.") else address


def url_of(port: int) -> str:
    return f"opc.tcp://127.0.0.1:{port}/"


@asynccontextmanager
async def opcua_server(
    name: str,
    *,
    port: int | None = None,
    discovery_server: bool = False,
    endpoint_host: str = "127.0.0.1",
) -> AsyncIterator[Server]:
    """A running server named `name` (URI `urn:test:<name>`) at opc.tcp://127.0.0.1:port/;
    `endpoint_host` is the host it announces (listening on every address when not 127.0.0.1)."""
    port = port or free_tcp_port()
    server = Server()
    await server.init(await _address_space())
    server.set_endpoint(f"opc.tcp://{endpoint_host}:{port}/")
    server.set_server_name(name)
    await server.set_application_uri(f"urn:test:{name}")
    if discovery_server:
        server.application_type = ua.ApplicationType.DiscoveryServer
    async with server:
        yield server


def answer_with(server: Server, applications: Sequence[ua.ApplicationDescription]) -> None:
    """Make `server` answer FindServers with `applications`, as a hostile server would."""

    def find_servers(params: Any, sockname: Any = None) -> list[ua.ApplicationDescription]:
        return list(applications)

    server.iserver.find_servers = find_servers  # type: ignore[method-assign]


def description(
    uri: str,
    name: str,
    urls: Sequence[str],
    kind: ua.ApplicationType = ua.ApplicationType.Server,
) -> ua.ApplicationDescription:
    described = ua.ApplicationDescription()
    described.ApplicationUri = uri
    described.ApplicationName = ua.LocalizedText(name)
    described.ApplicationType = kind
    described.DiscoveryUrls = list(urls)
    return described
