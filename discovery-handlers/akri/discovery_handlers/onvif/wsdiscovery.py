"""Pure: WS-Discovery (2005/04) Probe messages for ONVIF cameras, and the answers to them.

A camera is an endpoint: a stable uuid (its EndpointReference), the service URLs it can be
reached at (XAddrs) and its scopes. It answers a Probe with ProbeMatches relating to the
probe's MessageID, announces itself with Hello and leaves with Bye.
"""

from __future__ import annotations

import logging
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

from akri.discovery_handlers.onvif.safexml import UnsafeXml, first, local, parse_xml, text_of

log = logging.getLogger(__name__)

GROUP = "239.255.255.250"
PORT = 3702
SOAP_ENV = "http://www.w3.org/2003/05/soap-envelope"
ADDRESSING = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
DISCOVERY = "http://schemas.xmlsoap.org/ws/2005/04/discovery"
NETWORK_WSDL = "http://www.onvif.org/ver10/network/wsdl"
VIDEO_TRANSMITTER = "NetworkVideoTransmitter"

Kind = Literal["ProbeMatches", "Hello", "Bye"]
_KINDS: tuple[Kind, ...] = ("ProbeMatches", "Hello", "Bye")
_ENDPOINT_ELEMENT = {"ProbeMatches": "ProbeMatch", "Hello": "Hello", "Bye": "Bye"}


def new_message_id() -> str:
    return f"urn:uuid:{uuid.uuid4()}"


def probe(message_id: str) -> bytes:
    """A Probe for NetworkVideoTransmitter, the type every ONVIF camera declares."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<s:Envelope xmlns:s="{SOAP_ENV}" xmlns:a="{ADDRESSING}" xmlns:d="{DISCOVERY}" \
xmlns:dn="{NETWORK_WSDL}">
<s:Header>
<a:Action s:mustUnderstand="1">{DISCOVERY}/Probe</a:Action>
<a:MessageID>{message_id}</a:MessageID>
<a:To s:mustUnderstand="1">urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To>
</s:Header>
<s:Body><d:Probe><d:Types>dn:{VIDEO_TRANSMITTER}</d:Types></d:Probe></s:Body>
</s:Envelope>""".encode()


def endpoint_uuid(address: str) -> str:
    """`urn:uuid:ABC` -> `abc`, as Akri names devices."""
    return address.strip().removeprefix("urn:").removeprefix("uuid:").lower()


@dataclass(frozen=True)
class Endpoint:
    uuid: str
    xaddrs: tuple[str, ...] = ()
    scopes: tuple[str, ...] = ()
    types: tuple[str, ...] = ()

    @property
    def video_transmitter(self) -> bool:
        """Declares the type by local name (prefixes are the sender's choice)."""
        return any(t.rpartition(":")[2] == VIDEO_TRANSMITTER for t in self.types)


@dataclass(frozen=True)
class Message:
    kind: Kind
    endpoints: tuple[Endpoint, ...]
    relates_to: str | None = None


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
    )


def parse(data: bytes) -> Message | None:
    """A ProbeMatches, Hello or Bye; None (with a warning when malformed) for anything else."""
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
