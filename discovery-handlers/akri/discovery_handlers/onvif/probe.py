"""WS-Discovery over UDP multicast: probing for cameras (and resolving those that answer
without their service URLs), and hearing their Hello and Bye.

IPv4 goes to 239.255.255.250: with an interface address, probes leave by that interface only
and the listener joins the group there; otherwise the OS picks. IPv6, when an interface is
named, goes to ff02::c on that link (scope id = the interface's index), where link-local
cameras answer. TTL (hop limit) 1 either way: discovery never leaves the link. A family whose
group cannot be joined (IPv4 on a node without an IPv4 route) is left out with a warning, as
long as another one works.

Our own asyncio code, as no maintained async WS-Discovery library exists on PyPI: `wsdiscovery`
(2.1.2) runs a thread polling a selector with sleeps, its `async` module a placeholder;
onvif-zeep-async ships the discovery WSDL but no client; `onvif-client` (0.0.4, 2023) looks
unmaintained and `onvif-scanner` (0.2.0) is a scanner CLI (judged from their PyPI entries).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from akri.discovery_handlers.onvif import wsdiscovery
from akri.discovery_handlers.onvif.wsdiscovery import GROUP, GROUP6, Endpoint, Kind, Message

log = logging.getLogger(__name__)

ANY = "0.0.0.0"
ANY6 = "::"


@dataclass(frozen=True)
class Links:
    """Where WS-Discovery goes: IPv4 always, through the interface with address `ipv4` (None:
    the OS's choice); IPv6 too when `ipv6` names an interface, to ff02::c on that link only."""

    ipv4: str | None = None
    ipv6: str | None = None


def interface_index(name: str) -> int:
    """The scope id of link-local addresses and groups on interface `name`."""
    try:
        return socket.if_nametoindex(name)
    except OSError:
        raise OSError(f"no network interface named {name!r} on this node") from None


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, received: Callable[[Message], None]) -> None:
        self._received = received

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        message = wsdiscovery.parse(data)
        if message is not None:
            self._received(message.sent_by(str(addr[0])))


Option = tuple[int, int, int | bytes]  # setsockopt's level, name and value


@dataclass(frozen=True)
class Family:
    """How to talk WS-Discovery over one address family: the socket options that keep
    multicast on the chosen link, the wildcard and group addresses, and how to join."""

    name: str  # for messages: "IPv4", "IPv6 on eth0"
    domain: socket.AddressFamily
    options: tuple[Option, ...]
    any: tuple[str | int, ...]
    group: tuple[str | int, ...]
    membership: Option


def families_of(links: Links, port: int) -> list[Family]:
    """What `links` asks for, WS-Discovery's group `port` on each; OSError for an interface
    that does not exist."""
    ipv4_options: tuple[Option, ...] = ((socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1),)
    if links.ipv4 is not None:
        address = socket.inet_aton(links.ipv4)
        ipv4_options += ((socket.IPPROTO_IP, socket.IP_MULTICAST_IF, address),)
    chosen = [
        Family(
            "IPv4",
            socket.AF_INET,
            ipv4_options,
            (ANY, 0),
            (GROUP, port),
            (
                socket.IPPROTO_IP,
                socket.IP_ADD_MEMBERSHIP,
                socket.inet_aton(GROUP) + socket.inet_aton(links.ipv4 or ANY),
            ),
        )
    ]
    if links.ipv6 is not None:
        index = interface_index(links.ipv6)
        chosen.append(
            Family(
                f"IPv6 on {links.ipv6}",
                socket.AF_INET6,
                (
                    (socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1),
                    (socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1),
                    (socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, index),
                ),
                (ANY6, 0, 0, index),
                (GROUP6, port, 0, index),
                (
                    socket.IPPROTO_IPV6,
                    socket.IPV6_JOIN_GROUP,
                    socket.inet_pton(socket.AF_INET6, GROUP6) + struct.pack("@I", index),
                ),
            )
        )
    return chosen


async def datagrams(
    family: Family, bind: tuple[str | int, ...], received: Callable[[Message], None], join: bool
) -> asyncio.DatagramTransport:
    """A non-blocking socket of `family` bound to `bind` (joined to the group when `join`),
    delivering parsed messages to `received`."""
    sock = socket.socket(family.domain, socket.SOCK_DGRAM, socket.IPPROTO_UDP)
    try:
        for option in family.options:
            sock.setsockopt(*option)
        if join:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(bind)
        if join:
            sock.setsockopt(*family.membership)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_datagram_endpoint(lambda: _Datagrams(received), sock=sock)
    return transport


async def _ask(
    families: Iterable[Family], window: float, requests: dict[str, bytes], kind: Kind
) -> list[Endpoint]:
    """Send each request (by MessageID) to the group of every family; the endpoints of the
    answers of `kind` relating to one of them within `window` seconds, the answer window
    WS-Discovery prescribes.
    """
    found: list[Endpoint] = []

    def received(message: Message) -> None:
        if message.kind == kind and message.relates_to in requests:
            found.extend(message.endpoints)

    transports: list[asyncio.DatagramTransport] = []
    try:
        for family in families:
            transport = await datagrams(family, family.any, received, join=False)
            transports.append(transport)
            for request in requests.values():
                transport.sendto(request, family.group)
        await asyncio.sleep(window)  # the answer window, not a synchronisation
    finally:
        for transport in transports:
            transport.close()
    return found


async def resolve(
    families: Iterable[Family], window: float, endpoints: Iterable[Endpoint]
) -> dict[str, Endpoint]:
    """The endpoints (by uuid) that answered a Resolve with their XAddrs."""
    requests = {}
    for endpoint in endpoints:
        message_id = wsdiscovery.new_message_id()
        requests[message_id] = wsdiscovery.resolve(message_id, endpoint.reference)
    if not requests:
        return {}
    matches = await _ask(families, window, requests, "ResolveMatches")
    return {e.uuid: e for e in matches if e.xaddrs}


async def probe(families: Iterable[Family], window: float) -> dict[str, Endpoint]:
    """Endpoints (by uuid) answering one Probe, those that left out their XAddrs resolved."""
    chosen = list(families)
    message_id = wsdiscovery.new_message_id()
    request = {message_id: wsdiscovery.probe(message_id)}
    found = {e.uuid: e for e in await _ask(chosen, window, request, "ProbeMatches")}
    unresolved = [e for e in found.values() if not e.xaddrs]
    found.update(await resolve(chosen, window, unresolved))
    return found


class Announcements:
    """Hello and Bye messages heard on the group (on every link), queued for the handler."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Message] = asyncio.Queue()
        self._transports: list[asyncio.DatagramTransport] = []

    async def start(self, families: Iterable[Family]) -> list[Family]:
        """Join the group of each family; those that could join (a node without IPv4
        multicast still discovers over IPv6). OSError when none could."""
        joined, failures = [], []
        for family in families:
            try:
                transport = await datagrams(family, family.group, self._heard, join=True)
            except OSError as error:
                failures.append(f"{family.name}: {error.strerror or error}")
                continue
            self._transports.append(transport)
            joined.append(family)
        if not joined:
            raise OSError("; ".join(failures))
        if failures:
            log.warning(
                "WS-Discovery left out, its group cannot be joined: %s", "; ".join(failures)
            )
        return joined

    def _heard(self, message: Message) -> None:
        if message.kind in ("Hello", "Bye"):
            self.queue.put_nowait(message)

    def close(self) -> None:
        for transport in self._transports:
            transport.close()
