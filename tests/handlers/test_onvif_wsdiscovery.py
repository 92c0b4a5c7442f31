"""Pure: WS-Discovery probe building and parsing of ProbeMatches, Hello and Bye."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from akri.discovery_handlers.onvif import wsdiscovery
from akri.discovery_handlers.onvif.wsdiscovery import Endpoint, Message

ENV = "http://www.w3.org/2003/05/soap-envelope"
WSA = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
WSD = "http://schemas.xmlsoap.org/ws/2005/04/discovery"


def envelope(header: str, body: str) -> bytes:
    return (
        f'<e:Envelope xmlns:e="{ENV}" xmlns:w="{WSA}" xmlns:d="{WSD}" '
        f'xmlns:tdn="http://www.onvif.org/ver10/network/wsdl">'
        f"<e:Header>{header}</e:Header><e:Body>{body}</e:Body></e:Envelope>"
    ).encode()


def endpoint(address: str, extra: str = "") -> str:
    return f"<w:EndpointReference><w:Address>{address}</w:Address></w:EndpointReference>{extra}"


def test_probe_asks_for_video_transmitters_with_a_fresh_message_id() -> None:
    first, second = wsdiscovery.new_message_id(), wsdiscovery.new_message_id()
    assert first != second
    assert first.startswith("urn:uuid:")
    root = ET.fromstring(wsdiscovery.probe(first))
    ns = {"s": ENV, "a": WSA, "d": WSD}
    assert root.findtext("s:Header/a:MessageID", None, ns) == first
    assert root.findtext("s:Header/a:Action", None, ns) == f"{WSD}/Probe"
    assert root.findtext("s:Body/d:Probe/d:Types", None, ns) == "dn:NetworkVideoTransmitter"
    assert 'xmlns:dn="http://www.onvif.org/ver10/network/wsdl"' in wsdiscovery.probe(first).decode()


def test_probe_matches_give_uuid_addresses_scopes_and_relation() -> None:
    match = endpoint(
        "urn:uuid:3FA1FE68-B915-4053-A3E1-AC15A21F5F91",
        "<d:Types>tdn:NetworkVideoTransmitter</d:Types>"
        "<d:Scopes> onvif://a onvif://b </d:Scopes>"
        "<d:XAddrs>http://10.0.0.5/onvif/device_service http://[fe80::1]/onvif</d:XAddrs>",
    )
    data = envelope(
        "<w:RelatesTo>urn:uuid:42</w:RelatesTo>",
        f"<d:ProbeMatches><d:ProbeMatch>{match}</d:ProbeMatch>"
        f"<d:ProbeMatch>{endpoint('uuid:second')}</d:ProbeMatch></d:ProbeMatches>",
    )
    assert wsdiscovery.parse(data) == Message(
        "ProbeMatches",
        (
            Endpoint(
                "3fa1fe68-b915-4053-a3e1-ac15a21f5f91",
                ("http://10.0.0.5/onvif/device_service", "http://[fe80::1]/onvif"),
                ("onvif://a", "onvif://b"),
                ("tdn:NetworkVideoTransmitter",),
            ),
            Endpoint("second"),
        ),
        "urn:uuid:42",
    )


def test_hello_and_bye() -> None:
    hello = wsdiscovery.parse(envelope("", f"<d:Hello>{endpoint('urn:uuid:A')}</d:Hello>"))
    bye = wsdiscovery.parse(envelope("", f"<d:Bye>{endpoint('urn:uuid:A')}</d:Bye>"))
    assert hello == Message("Hello", (Endpoint("a"),))
    assert bye == Message("Bye", (Endpoint("a"),))


def test_only_video_transmitters_count_whatever_the_prefix() -> None:
    assert Endpoint("a", types=("x:Device", "n:NetworkVideoTransmitter")).video_transmitter
    assert not Endpoint("a", types=("wsdp:Device", "pub:Computer")).video_transmitter


def test_other_discovery_messages_are_ignored_quietly(caplog: pytest.LogCaptureFixture) -> None:
    assert wsdiscovery.parse(wsdiscovery.probe(wsdiscovery.new_message_id())) is None
    assert caplog.text == ""


@pytest.mark.parametrize(
    ("data", "warning"),
    [
        (b"\x00\xff garbage", "not well-formed"),
        (envelope("", ""), "no SOAP body"),
        (envelope("", "<d:Hello><d:XAddrs>http://x</d:XAddrs></d:Hello>"), "without"),
        (envelope("", f"<d:Hello>{endpoint('urn:uuid:')}</d:Hello>"), "without"),
        (b'<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>', "DTD"),
        (b'<?xml version="1.0"?>\n<!DOCTYPE x><x/>', "DTD"),
        # Not XML (names are case-sensitive; a declaration outside a DTD): the parser refuses
        # them before any DTD is seen.
        (b'<?xml version="1.0"?>\n<!doctype x><x/>', "not well-formed"),
        (b'<!ENTITY a "aaaa">', "not well-formed"),
    ],
)
def test_malformed_and_hostile_messages_are_ignored_with_a_warning(
    data: bytes, warning: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert wsdiscovery.parse(data) is None
    assert warning in caplog.text


def test_valid_endpoints_survive_a_malformed_sibling(caplog: pytest.LogCaptureFixture) -> None:
    data = envelope(
        "",
        f"<d:ProbeMatches><d:ProbeMatch/><d:ProbeMatch>{endpoint('urn:uuid:b')}</d:ProbeMatch>"
        "</d:ProbeMatches>",
    )
    assert wsdiscovery.parse(data) == Message("ProbeMatches", (Endpoint("b"),))
    assert "without an EndpointReference" in caplog.text


def test_resolve_names_the_endpoint_address_as_it_was_sent() -> None:
    match = envelope(
        "<w:RelatesTo>urn:uuid:7</w:RelatesTo>",
        f"<d:ProbeMatches><d:ProbeMatch>{endpoint('urn:uuid:ABC-1&amp;')}</d:ProbeMatch>"
        "</d:ProbeMatches>",
    )
    message = wsdiscovery.parse(match)
    assert message is not None
    (found,) = message.endpoints
    assert found == Endpoint("abc-1&")
    assert found.reference == "urn:uuid:ABC-1&"
    assert Endpoint("abc").reference == "urn:uuid:abc"
    root = ET.fromstring(wsdiscovery.resolve("urn:uuid:8", found.reference))
    ns = {"s": ENV, "a": WSA, "d": WSD}
    assert root.findtext("s:Header/a:Action", None, ns) == f"{WSD}/Resolve"
    assert root.findtext("s:Header/a:MessageID", None, ns) == "urn:uuid:8"
    assert root.findtext("s:Body/d:Resolve/a:EndpointReference/a:Address", None, ns) == (
        "urn:uuid:ABC-1&"
    )


def test_resolve_matches_carry_the_service_urls() -> None:
    data = envelope(
        "<w:RelatesTo>urn:uuid:8</w:RelatesTo>",
        "<d:ResolveMatches><d:ResolveMatch>"
        f"{endpoint('urn:uuid:abc', '<d:XAddrs>http://[fe80::1%2]/onvif</d:XAddrs>')}"
        "</d:ResolveMatch></d:ResolveMatches>",
    )
    assert wsdiscovery.parse(data) == Message(
        "ResolveMatches", (Endpoint("abc", ("http://[fe80::1%2]/onvif",)),), "urn:uuid:8"
    )
