"""WS-Discovery over UDP multicast: probing for cameras (and resolving those that answer
without their service URLs), and hearing their Hello and Bye.

With an interface address, probes leave by that interface only and the listener joins the
group there; otherwise the OS picks. TTL 1 either way: discovery never leaves the link.

Our own asyncio code, as no maintained async WS-Discovery library exists on PyPI: `wsdiscovery`
(2.1.2) runs a thread polling a selector with sleeps, its `async` module a placeholder;
onvif-zeep-async ships the discovery WSDL but no client; `onvif-client` (0.0.4, 2023) looks
unmaintained and `onvif-scanner` (0.2.0) is a scanner CLI (judged from their PyPI entries).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterable

from akri.discovery_handlers.onvif import wsdiscovery
from akri.discovery_handlers.onvif.wsdiscovery import GROUP, Endpoint, Kind, Message

ANY = "0.0.0.0"


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, received: Callable[[Message], None]) -> None:
        self._received = received

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        message = wsdiscovery.parse(data)
        if message is not None:
            self._received(message)


def _multicast_socket(interface: str | None) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
    if interface is not None:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(interface))
    sock.setblocking(False)
    return sock


async def _ask(
    interface: str | None, port: int, window: float, requests: dict[str, bytes], kind: Kind
) -> list[Endpoint]:
    """Send each request (by MessageID) to the group; the endpoints of the answers of `kind`
    relating to one of them within `window` seconds, the answer window WS-Discovery prescribes.
    """
    found: list[Endpoint] = []

    def received(message: Message) -> None:
        if message.kind == kind and message.relates_to in requests:
            found.extend(message.endpoints)

    sock = _multicast_socket(interface)
    try:
        sock.bind((ANY, 0))
    except OSError:
        sock.close()
        raise
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(received), sock=sock)
    try:
        for request in requests.values():
            transport.sendto(request, (GROUP, port))
        await asyncio.sleep(window)  # the answer window, not a synchronisation
    finally:
        transport.close()
    return found


async def resolve(
    interface: str | None, port: int, window: float, endpoints: Iterable[Endpoint]
) -> dict[str, Endpoint]:
    """The endpoints (by uuid) that answered a Resolve with their XAddrs."""
    requests = {}
    for endpoint in endpoints:
        message_id = wsdiscovery.new_message_id()
        requests[message_id] = wsdiscovery.resolve(message_id, endpoint.reference)
    if not requests:
        return {}
    matches = await _ask(interface, port, window, requests, "ResolveMatches")
    return {e.uuid: e for e in matches if e.xaddrs}


async def probe(interface: str | None, port: int, window: float) -> dict[str, Endpoint]:
    """Endpoints (by uuid) answering one Probe, those that left out their XAddrs resolved."""
    message_id = wsdiscovery.new_message_id()
    matches = await _ask(
        interface, port, window, {message_id: wsdiscovery.probe(message_id)}, "ProbeMatches"
    )
    found = {e.uuid: e for e in matches}
    unresolved = [e for e in found.values() if not e.xaddrs]
    found.update(await resolve(interface, port, window, unresolved))
    return found


class Announcements:
    """Hello and Bye messages heard on the group, queued for the handler."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message] = asyncio.Queue()
        self._transport: asyncio.DatagramTransport | None = None

    async def start(self, interface: str | None, port: int) -> None:
        sock = _multicast_socket(interface)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            sock.bind((GROUP, port))
            membership = socket.inet_aton(GROUP) + socket.inet_aton(interface or ANY)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        except OSError:
            sock.close()
            raise
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(self._heard), sock=sock
        )

    def _heard(self, message: Message) -> None:
        if message.kind in ("Hello", "Bye"):
            self.queue.put_nowait(message)

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
