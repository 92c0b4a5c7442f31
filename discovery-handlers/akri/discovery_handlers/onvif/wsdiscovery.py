"""Pure: WS-Discovery (2005/04) Probe and Resolve messages for ONVIF cameras, and the answers.

A camera is an endpoint: a stable uuid (its EndpointReference), the service URLs it can be
reached at (XAddrs) and its scopes. It answers a Probe with ProbeMatches relating to the
probe's MessageID, announces itself with Hello and leaves with Bye. A match or Hello may leave
the XAddrs out; a Resolve naming the endpoint's address then asks for them (ResolveMatches).
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Literal
from xml.sax.saxutils import escape

from akri.discovery_handlers.onvif.safexml import UnsafeXml, first, local, parse_xml, text_of

log = logging.getLogger(__name__)

GROUP = "239.255.255.250"
GROUP6 = "ff02::c"  # link-local scope: the same link as IPv4's TTL 1
PORT = 3702
SOAP_ENV = "http://www.w3.org/2003/05/soap-envelope"
ADDRESSING = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
DISCOVERY = "http://schemas.xmlsoap.org/ws/2005/04/discovery"
NETWORK_WSDL = "http://www.onvif.org/ver10/network/wsdl"
VIDEO_TRANSMITTER = "NetworkVideoTransmitter"

Kind = Literal["ProbeMatches", "ResolveMatches", "Hello", "Bye"]
_KINDS: tuple[Kind, ...] = ("ProbeMatches", "ResolveMatches", "Hello", "Bye")
_ENDPOINT_ELEMENT = {
    "ProbeMatches": "ProbeMatch",
    "ResolveMatches": "ResolveMatch",
    "Hello": "Hello",
    "Bye": "Bye",
}


def new_message_id() -> str:
    return f"urn:uuid:{uuid.uuid4()}"


def _request(action: str, message_id: str, body: str) -> bytes:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<s:Envelope xmlns:s="{SOAP_ENV}" xmlns:a="{ADDRESSING}" xmlns:d="{DISCOVERY}" \
xmlns:dn="{NETWORK_WSDL}">
<s:Header>
<a:Action s:mustUnderstand="1">{DISCOVERY}/{action}</a:Action>
<a:MessageID>{message_id}</a:MessageID>
<a:To s:mustUnderstand="1">urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To>
</s:Header>
<s:Body>{body}</s:Body>
</s:Envelope>""".encode()


def probe(message_id: str) -> bytes:
    """A Probe for NetworkVideoTransmitter, the type every ONVIF camera declares."""
    return _request(
        "Probe", message_id, f"<d:Probe><d:Types>dn:{VIDEO_TRANSMITTER}</d:Types></d:Probe>"
    )


def resolve(message_id: str, address: str) -> bytes:
    """A Resolve for the endpoint whose EndpointReference address is `address`."""
    return _request(
        "Resolve",
        message_id,
        f"<d:Resolve><a:EndpointReference><a:Address>{escape(address)}</a:Address>"
        "</a:EndpointReference></d:Resolve>",
    )


def endpoint_uuid(address: str) -> str:
    """`urn:uuid:ABC` -> `abc`, as Akri names devices."""
    return address.strip().removeprefix("urn:").removeprefix("uuid:").lower()


@dataclass(frozen=True)
class Endpoint:
    uuid: str
    xaddrs: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    types: tuple[str, ...] = ()
    address: str = field(default="", compare=False)  # as sent, for a Resolve
    sender: str | None = field(default=None, compare=False)  # the datagram's source address

    @property
    def reference(self) -> str:
        return self.address or f"urn:uuid:{self.uuid}"

    @property
    def video_transmitter(self) -> bool:
        """Declares the type by local name (prefixes are the sender's choice)."""
        return any(t.rpartition(":")[2] == VIDEO_TRANSMITTER for t in self.types)


@dataclass(frozen=True)
class Message:
    kind: Kind
    endpoints: tuple[Endpoint, ...]
    relates_to: str | None = None

    def sent_by(self, sender: str) -> Message:
        """The message with each endpoint marked as told by `sender` (an IP address): only
        that host is taken at its word for its service URLs."""
        endpoints = tuple(dataclasses.replace(e, sender=sender) for e in self.endpoints)
        return dataclasses.replace(self, endpoints=endpoints)


def _words(element: ET.Element, name: str) -> tuple[str, ...]:
    return tuple((text_of(element, name) or "").split())


def _endpoint(element: ET.Element) -> Endpoint | None:
    address = text_of(element, "Address")
    if address is None or not endpoint_uuid(address):
        return None
    return Endpoint(
        endpoint_uuid(address),
        _words(element, "XAddrs"),
        _words(element, "Scopes"),
        _words(element, "Types"),
        address.strip(),
    )


def parse(data: bytes) -> Message | None:
    """A ProbeMatches, ResolveMatches, Hello or Bye; None (with a warning when malformed) else."""
    try:
        root = parse_xml(data)
    except UnsafeXml as error:
        log.warning("WS-Discovery message ignored: %s", error)
        return None
    body = first(root, "Body")
    content = next(iter(body), None) if body is not None else None
    if content is None:
        log.warning("WS-Discovery message ignored: no SOAP body")
        return None
    kind = next((k for k in _KINDS if k == local(content.tag)), None)
    if kind is None:
        log.debug("WS-Discovery %s ignored", local(content.tag))
        return None
    elements = [e for e in content.iter() if local(e.tag) == _ENDPOINT_ELEMENT[kind]]
    endpoints = [_endpoint(e) for e in elements]
    valid = tuple(e for e in endpoints if e is not None)
    if len(valid) < len(endpoints) or not valid:
        log.warning("WS-Discovery %s: endpoint without an EndpointReference address ignored", kind)
    if not valid:
        return None
    header = first(root, "Header")
    relates_to = text_of(header, "RelatesTo") if header is not None else None
    return Message(kind, valid, relates_to)
