"""A small fake ONVIF camera on 127.0.0.1: WS-Discovery responder plus SOAP endpoints.

It answers Probes on the group (joined on loopback) with a ProbeMatch naming its device
service URL (or leaving it out: then a Resolve for its address gets it), sends Hello and Bye
when told, and serves GetSystemDateAndTime (open), GetNetworkInterfaces, GetServices,
GetCapabilities, GetProfiles and GetStreamUri, of Media1, Media2 or both as `media` says
(WS-UsernameToken PasswordDigest checked, and its Created time against the camera's own clock,
which `clock_offset` may set off as real cameras' are; fault otherwise). It can also stall
(`stalled`) or send any bytes (`raw_answer`). With `ipv6_interface` its discovery is on
ff02::c of that link instead (serve SOAP on a link-local `host` then: its XAddrs leave the zone
out, as real cameras' do). Written from the specifications, independently of the handler, so
the two check each other.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import socket
import struct
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from types import TracebackType

from aiohttp import web

GROUP = "239.255.255.250"
GROUP6 = "ff02::c"
LOOPBACK = "127.0.0.1"
ON_LOOPBACK = "allowLocalAddresses: true\n"
"""discoveryDetails that let the handler call these cameras: it refuses loopback unless told."""
ENV = "http://www.w3.org/2003/05/soap-envelope"
WSA = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
WSD = "http://schemas.xmlsoap.org/ws/2005/04/discovery"
NS = {"s": ENV, "a": WSA, "d": WSD}
DEVICE = "http://www.onvif.org/ver10/device/wsdl"
MEDIA = "http://www.onvif.org/ver10/media/wsdl"
MEDIA2 = "http://www.onvif.org/ver20/media/wsdl"
OPEN_OPERATIONS = {"GetSystemDateAndTime"}
TOKEN_FRESHNESS = timedelta(seconds=30)
INFORMATION = {
    "Manufacturer": "Acme Optics",
    "Model": "C-100",
    "FirmwareVersion": "2.4.1",
    "SerialNumber": "SN0042",
    "HardwareId": "hw-7",
}


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


def _envelope(header: str, body: str) -> bytes:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{ENV}" xmlns:a="{WSA}" '
        f'xmlns:d="{WSD}" xmlns:dn="http://www.onvif.org/ver10/network/wsdl" '
        'xmlns:tds="http://www.onvif.org/ver10/device/wsdl" '
        f'xmlns:trt="{MEDIA}" xmlns:tr2="{MEDIA2}" '
        'xmlns:tt="http://www.onvif.org/ver10/schema">'
        f"<s:Header>{header}</s:Header><s:Body>{body}</s:Body></s:Envelope>"
    ).encode()


def _fault(reason: str) -> web.Response:
    body = (
        "<s:Fault><s:Code><s:Value>s:Sender</s:Value></s:Code>"
        f'<s:Reason><s:Text xml:lang="en">{reason}</s:Text></s:Reason></s:Fault>'
    )
    return web.Response(status=400, body=_envelope("", body), content_type="application/soap+xml")


class FakeCamera:
    """Use as `async with FakeCamera(port=...) as camera:`; `camera.xaddr` is its URL."""

    def __init__(
        self,
        *,
        port: int,
        uuid: str,
        scopes: tuple[str, ...] = ("onvif://www.onvif.org/name/Lobby",),
        username: str = "admin",
        password: str = "secret",
        mac: str = "00:11:22:AA:BB:CC",
        streams: Mapping[str, str] | None = None,
        clock_offset: timedelta = timedelta(),
        media: tuple[str, ...] = (MEDIA,),
        host: str = LOOPBACK,
        ipv6_interface: str | None = None,
        discovery_address: str = LOOPBACK,
    ) -> None:
        self.uuid = uuid
        self.scopes = scopes
        self.answers_probes = True
        self.xaddrs_in_probe_matches = True  # False: found only by a Resolve
        self.stalled = False  # SOAP requests wait until the camera closes
        self.raw_answer: bytes | None = None  # sent as is for every SOAP request
        self._released = asyncio.Event()
        self.resolves = 0
        self.answers_soap = True
        self.extra_probe_replies: list[bytes] = []
        self.operations: list[str] = []
        self.clock_offset = clock_offset
        self.media = media  # the media services offered: Media1, Media2 or both
        self.called: list[tuple[str, str]] = []  # (service namespace, operation)
        self.unsupported: set[str] = set()  # operations answered with an ActionNotSupported fault
        self.refused: list[str] = []  # operations refused for want of a valid token
        self.information = dict(INFORMATION)  # GetDeviceInformation: element -> raw XML text
        self._username, self._password, self._mac = username, password, mac
        self._streams = dict(streams or {"main_1": "rtsp://127.0.0.1:554/main"})
        self._runner: web.AppRunner | None = None
        self._transport: asyncio.DatagramTransport | None = None
        self._index = 0 if ipv6_interface is None else socket.if_nametoindex(ipv6_interface)
        self._sender = self._discovery_socket()
        if self._index:
            self._group: tuple[str | int, ...] = (GROUP6, port, 0, self._index)
            self._sender.bind(("::", 0, 0, self._index))
        else:
            self._group = (GROUP, port)
            self._sender.bind((discovery_address, 0))  # the source of its datagrams
        self.xaddr = ""  # its device service URL, which its discovery messages name
        self.media_xaddr = ""  # the media service URL its answers name
        self._host = host  # where SOAP is served

    async def __aenter__(self) -> FakeCamera:
        app = web.Application()
        app.router.add_post("/onvif/{service}", self._soap)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, 0)
        await site.start()
        http_port = self._runner.addresses[0][1]
        address = self._host.partition("%")[0]  # a camera cannot know its peers' zone
        host = f"[{address}]" if ":" in address else address
        self.xaddr = f"http://{host}:{http_port}/onvif/device_service"
        self.media_xaddr = f"http://{host}:{http_port}/onvif/media_service"
        sock = self._discovery_socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(self._group)
        if self._index:
            membership = socket.inet_pton(socket.AF_INET6, GROUP6) + struct.pack("@I", self._index)
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, membership)
        else:
            membership = socket.inet_aton(GROUP) + socket.inet_aton(LOOPBACK)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
        responder = _Responder(self)
        self._transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
            lambda: responder, sock=sock
        )
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._released.set()
        if self._transport is not None:
            self._transport.close()
        self._sender.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def _discovery_socket(self) -> socket.socket:
        """UDP on the camera's discovery link, multicast sent there only (TTL / hops 1)."""
        if not self._index:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(LOOPBACK))
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
            return sock
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, self._index)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 1)
        return sock

    @property
    def urn(self) -> str:
        return f"urn:uuid:{self.uuid}"

    def _endpoint(self, xaddrs: bool = True) -> str:
        return (
            f"<a:EndpointReference><a:Address>{self.urn}</a:Address></a:EndpointReference>"
            "<d:Types>dn:NetworkVideoTransmitter</d:Types>"
            f"<d:Scopes>{' '.join(self.scopes)}</d:Scopes>"
            + (f"<d:XAddrs>{self.xaddr}</d:XAddrs>" if xaddrs else "")
            + "<d:MetadataVersion>1</d:MetadataVersion>"
        )

    def _matches(self, kind: str, relates_to: str, xaddrs: bool) -> bytes:
        header = (
            f"<a:Action>{WSD}/{kind}es</a:Action><a:MessageID>urn:uuid:1</a:MessageID>"
            f"<a:RelatesTo>{relates_to}</a:RelatesTo>"
        )
        match = f"<d:{kind}es><d:{kind}>{self._endpoint(xaddrs)}</d:{kind}></d:{kind}es>"
        return _envelope(header, match)

    def probe_match(self, relates_to: str) -> bytes:
        return self._matches("ProbeMatch", relates_to, self.xaddrs_in_probe_matches)

    def hello(self, xaddrs: bool = True) -> None:
        body = f"<d:Hello>{self._endpoint(xaddrs)}</d:Hello>"
        self._announce(_envelope(f"<a:Action>{WSD}/Hello</a:Action>", body))

    def bye(self) -> None:
        body = (
            f"<d:Bye><a:EndpointReference><a:Address>{self.urn}</a:Address>"
            "</a:EndpointReference></d:Bye>"
        )
        self._announce(_envelope(f"<a:Action>{WSD}/Bye</a:Action>", body))

    def _announce(self, message: bytes) -> None:
        self._sender.sendto(message, self._group)

    def answer(self, data: bytes, sender: tuple[str | int, ...]) -> None:
        """Probes and the Resolves that name this camera, each answered to its sender."""
        root = ET.fromstring(data)
        message_id = root.findtext("s:Header/a:MessageID", "", NS)
        if root.find("s:Body/d:Probe", NS) is not None and self.answers_probes:
            replies = [*self.extra_probe_replies, self.probe_match(message_id)]
        elif root.findtext("s:Body/d:Resolve/a:EndpointReference/a:Address", "", NS) == self.urn:
            self.resolves += 1
            replies = [self._matches("ResolveMatch", message_id, xaddrs=True)]
        else:
            replies = []
        for reply in replies:
            self._sender.sendto(reply, sender)

    def _authorized(self, root: ET.Element) -> bool:
        token = root.find(
            ".//{http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd}"
            "UsernameToken"
        )
        if token is None:
            return False
        fields = {child.tag.rpartition("}")[2]: child.text or "" for child in token}
        try:
            created = datetime.fromisoformat(fields.get("Created", "").replace("Z", "+00:00"))
        except ValueError:
            return False
        if abs(created - self.now()) > TOKEN_FRESHNESS:
            return False
        nonce = base64.b64decode(fields.get("Nonce", ""))
        expected = hashlib.sha1(
            nonce + fields.get("Created", "").encode() + self._password.encode()
        ).digest()
        return (
            fields.get("Username") == self._username
            and fields.get("Password") == base64.b64encode(expected).decode()
        )

    def now(self) -> datetime:
        return datetime.now(UTC) + self.clock_offset

    async def _soap(self, request: web.Request) -> web.Response:
        if not self.answers_soap:
            return web.Response(status=503, text="down")
        if self.stalled:
            await self._released.wait()  # a camera too slow to answer in time
        if self.raw_answer is not None:
            return web.Response(body=self.raw_answer, content_type="application/soap+xml")
        root = ET.fromstring(await request.read())
        body = root.find("s:Body", NS)
        assert body is not None
        operation = body[0]
        service, _, name = operation.tag.removeprefix("{").partition("}")
        self.operations.append(name)
        self.called.append((service, name))
        if name not in OPEN_OPERATIONS and not self._authorized(root):
            self.refused.append(name)
            return _fault("Sender not authorized")
        if name in self.unsupported or (service in (MEDIA, MEDIA2) and service not in self.media):
            return _fault("ActionNotSupported")
        if service == MEDIA2:
            answer = self._media2_answer(name, operation)
        else:
            answer = self._answer(name, operation)
        return web.Response(
            body=_envelope("", answer),
            content_type="application/soap+xml",
        )

    def _answer(self, name: str, operation: ET.Element) -> str:
        if name == "GetSystemDateAndTime":
            now = self.now()
            return (
                "<tds:GetSystemDateAndTimeResponse><tds:SystemDateAndTime>"
                "<tt:DateTimeType>NTP</tt:DateTimeType><tt:DaylightSavings>false"
                "</tt:DaylightSavings><tt:UTCDateTime><tt:Time>"
                f"<tt:Hour>{now.hour}</tt:Hour><tt:Minute>{now.minute}</tt:Minute>"
                f"<tt:Second>{now.second}</tt:Second></tt:Time><tt:Date><tt:Year>{now.year}"
                f"</tt:Year><tt:Month>{now.month}</tt:Month><tt:Day>{now.day}</tt:Day></tt:Date>"
                "</tt:UTCDateTime></tds:SystemDateAndTime></tds:GetSystemDateAndTimeResponse>"
            )
        if name == "GetDeviceInformation":
            fields = "".join(f"<tds:{k}>{v}</tds:{k}>" for k, v in self.information.items())
            return f"<tds:GetDeviceInformationResponse>{fields}</tds:GetDeviceInformationResponse>"
        if name == "GetNetworkInterfaces":
            return (
                '<tds:GetNetworkInterfacesResponse><tds:NetworkInterfaces token="eth0">'
                "<tt:Enabled>true</tt:Enabled><tt:Info><tt:Name>eth0</tt:Name>"
                f"<tt:HwAddress>{self._mac}</tt:HwAddress></tt:Info></tds:NetworkInterfaces>"
                "</tds:GetNetworkInterfacesResponse>"
            )
        if name == "GetServices":
            services = "".join(
                f"<tds:Service><tds:Namespace>{namespace}</tds:Namespace><tds:XAddr>{address}"
                "</tds:XAddr><tds:Version><tt:Major>2</tt:Major><tt:Minor>0</tt:Minor>"
                "</tds:Version></tds:Service>"
                for namespace, address in [
                    (DEVICE, self.xaddr),
                    *((m, self.media_xaddr) for m in self.media),
                ]
            )
            return f"<tds:GetServicesResponse>{services}</tds:GetServicesResponse>"
        if name == "GetCapabilities":
            return (
                "<tds:GetCapabilitiesResponse><tds:Capabilities><tt:Media>"
                f"<tt:XAddr>{self.media_xaddr}</tt:XAddr></tt:Media></tds:Capabilities>"
                "</tds:GetCapabilitiesResponse>"
            )
        if name == "GetProfiles":
            profiles = "".join(
                f'<trt:Profiles token="{t}"><tt:Name>{t}</tt:Name></trt:Profiles>'
                for t in self._streams
            )
            return f"<trt:GetProfilesResponse>{profiles}</trt:GetProfilesResponse>"
        if name == "GetStreamUri":
            token = operation.findtext(f"{{{MEDIA}}}ProfileToken", "")
            return (
                "<trt:GetStreamUriResponse><trt:MediaUri>"
                f"<tt:Uri>{self._streams[token]}</tt:Uri></trt:MediaUri></trt:GetStreamUriResponse>"
            )
        return f"<unknown>{name}</unknown>"

    def _media2_answer(self, name: str, operation: ET.Element) -> str:
        if name == "GetProfiles":
            profiles = "".join(
                f'<tr2:Profiles token="{t}" fixed="true"><tr2:Name>{t}</tr2:Name>'
                "<tr2:Configurations/></tr2:Profiles>"
                for t in self._streams
            )
            return f"<tr2:GetProfilesResponse>{profiles}</tr2:GetProfilesResponse>"
        if name == "GetStreamUri":
            token = operation.findtext(f"{{{MEDIA2}}}ProfileToken", "")
            assert operation.findtext(f"{{{MEDIA2}}}Protocol") == "RTSP"
            uri = self._streams[token]
            return f"<tr2:GetStreamUriResponse><tr2:Uri>{uri}</tr2:Uri></tr2:GetStreamUriResponse>"
        return f"<unknown>{name}</unknown>"


class _Responder(asyncio.DatagramProtocol):
    def __init__(self, camera: FakeCamera) -> None:
        self._camera = camera

    def datagram_received(self, data: bytes, addr: tuple[str | int, ...]) -> None:
        self._camera.answer(data, addr)


WS_DISCOVERY_PORT = 3702


async def _serve(scope: str, uuid: str) -> None:
    async with FakeCamera(
        port=WS_DISCOVERY_PORT, uuid=uuid, scopes=(f"onvif://www.onvif.org/name/{scope}",)
    ) as camera:
        print(f"fake ONVIF camera {uuid} in scope {scope}: {camera.xaddr}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    # A camera for the ONVIF example on this machine (README): it answers WS-Discovery probes
    # on loopback port 3702, as `ONVIF_INTERFACE_ADDRESS=127.0.0.1 akri-discovery-handler onvif`
    # sends them, and SOAP on a free loopback port, until Ctrl-C.
    import argparse
    import contextlib

    parser = argparse.ArgumentParser(prog="python -m tests.handlers.fake_onvif")
    parser.add_argument("--scope", default="Lobby", help="its onvif name scope (default: Lobby)")
    parser.add_argument("--uuid", default="1a2b3c4d-0000-4000-8000-00000000000a")
    arguments = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(arguments.scope, arguments.uuid))
