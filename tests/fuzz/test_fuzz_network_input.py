"""Fuzzing what the network hands the handlers: WS-Discovery and SOAP XML, mDNS services.

Anything a camera or a host on the link sends must become a device, or be ignored with a
warning; it must never raise out of the parser, and a device it becomes must carry only
properties that containers can receive.
"""

from __future__ import annotations

import asyncio
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from zeroconf import BadTypeInNameException
from zeroconf.asyncio import AsyncServiceInfo

from akri.discovery_handlers.mdns import service as mdns
from akri.discovery_handlers.mdns.handler import service_of
from akri.discovery_handlers.onvif import answers, camera, services, wsdiscovery
from akri.naming import is_env_name

CAMERA_URL = "http://camera/onvif"
FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

SCHEMA = "http://www.onvif.org/ver10/schema"
NAMESPACES = [
    wsdiscovery.SOAP_ENV,
    wsdiscovery.ADDRESSING,
    wsdiscovery.DISCOVERY,
    SCHEMA,
    services.DEVICE,
    services.MEDIA,
    services.MEDIA2,
    "urn:other",
]
TAGS = [
    "Envelope",
    "Header",
    "Body",
    "ProbeMatches",
    "ProbeMatch",
    "Hello",
    "Bye",
    "EndpointReference",
    "Address",
    "XAddrs",
    "Scopes",
    "Types",
    "RelatesTo",
    "Fault",
    "Reason",
    "Text",
    "GetProfilesResponse",
    "Profiles",
    "MacAddress",
    "Uri",
    "Media",
    "XAddr",
    "GetSystemDateAndTimeResponse",
    "SystemDateAndTime",
    "UTCDateTime",
    "Date",
    "Year",
    "GetNetworkInterfacesResponse",
    "NetworkInterfaces",
    "Info",
    "HwAddress",
    "GetCapabilitiesResponse",
    "Capabilities",
    "GetStreamUriResponse",
    "MediaUri",
]
texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "urn:uuid:3FA1FE68-B915-4053-A3E1-AC15A21F5F91",
            "uuid:",
            "urn:",
            " ",
            "http://10.0.0.5/onvif/device_service http://[fe80::1]/onvif",
            "http://[::1",
            "tdn:NetworkVideoTransmitter",
            "onvif://www.onvif.org/name/Lobby",
            "rtsp://x/y",
        ]
    ),
)


@st.composite
def elements(draw: st.DrawFn, depth: int = 0) -> ET.Element:
    tag = f"{{{draw(st.sampled_from(NAMESPACES))}}}{draw(st.sampled_from(TAGS))}"
    element = ET.Element(tag, {"token": draw(st.text(max_size=5))} if draw(st.booleans()) else {})
    element.text = draw(texts)
    if depth < 4:
        for child in draw(st.lists(elements(depth + 1), max_size=3)):
            element.append(child)
    return element


def envelope(body: ET.Element) -> bytes:
    root = ET.Element(f"{{{wsdiscovery.SOAP_ENV}}}Envelope")
    ET.SubElement(root, f"{{{wsdiscovery.SOAP_ENV}}}Header")
    ET.SubElement(root, f"{{{wsdiscovery.SOAP_ENV}}}Body").append(body)
    return ET.tostring(root)


ANSWER = envelope(
    ET.fromstring(
        f'<r:GetNetworkInterfacesResponse xmlns:r="{services.DEVICE}" xmlns:t="{SCHEMA}">'
        '<r:NetworkInterfaces token="eth0"><t:Enabled>true</t:Enabled><t:Info>'
        "<t:HwAddress>00:11:22:AA:BB:CC</t:HwAddress></t:Info></r:NetworkInterfaces>"
        "</r:GetNetworkInterfacesResponse>"
    )
)
HELLO = envelope(
    ET.fromstring(
        f'<d:Hello xmlns:d="{wsdiscovery.DISCOVERY}" xmlns:a="{wsdiscovery.ADDRESSING}">'
        "<a:EndpointReference><a:Address>urn:uuid:1</a:Address></a:EndpointReference>"
        "<d:XAddrs>http://10.0.0.5/onvif/device_service</d:XAddrs>"
        "<d:Types>dn:NetworkVideoTransmitter</d:Types></d:Hello>"
    )
)


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` with a few bytes replaced, dropped or inserted."""
    result = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(result)))
        match draw(st.sampled_from(["replace", "drop", "insert"])):
            case "replace" if at < len(result):
                result[at] = draw(st.integers(0, 255))
            case "drop":
                del result[at : at + draw(st.integers(1, 8))]
            case _:
                result[at:at] = draw(st.binary(max_size=8))
    return bytes(result)


messages = st.one_of(
    st.binary(max_size=300),
    elements().map(envelope),
    elements().map(ET.tostring),
    mutated(HELLO),
)


@FUZZ
@given(data=messages)
def test_any_datagram_is_a_message_or_ignored(data: bytes) -> None:
    message = wsdiscovery.parse(data)
    if message is None:
        return
    assert message.endpoints
    for endpoint in message.endpoints:
        assert endpoint.uuid
        for url in endpoint.xaddrs:
            # Scopes stand in for the profile tokens and MAC a camera would tell over SOAP.
            tokens = dict.fromkeys(endpoint.scopes, url)
            seen = camera.Camera(url, endpoint.uuid, next(iter(tokens), None), tokens)
            device = camera.device(seen)
            assert url in device.id
            assert all(is_env_name(key) for key in device.properties)
            camera.host_address(url)
            assert isinstance(camera.with_zone(url, "eth0"), str)


class _Canned:
    """A camera that answers every request with the same bytes (the network is not fuzzed)."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def post_xml(self, address: str, envelope: object, headers: object) -> services.Answer:
        return services.Answer(200, self._data, {"Content-Type": "application/soap+xml"})

    async def aclose(self) -> None:
        pass


async def _answer(namespace: str, operation: str, data: bytes) -> object:
    camera = services.Camera(_Canned(data), await services.documents(), None, CAMERA_URL)
    return await camera.call(namespace, CAMERA_URL, operation, signed=False)


def _read(answer: object) -> None:
    answers.clock_offset(answer, datetime.now(UTC))
    answers.mac_address(answer)
    answers.service_addresses(answer)
    answers.media_address(answer)
    answers.profile_tokens(answer)
    answers.stream_uri(answer)
    answers.device_information(answer)


@pytest.mark.parametrize(
    ("namespace", "operation"),
    [
        (services.DEVICE, "GetSystemDateAndTime"),
        (services.DEVICE, "GetDeviceInformation"),
        (services.DEVICE, "GetNetworkInterfaces"),
        (services.DEVICE, "GetCapabilities"),
        (services.MEDIA, "GetProfiles"),
        (services.MEDIA, "GetStreamUri"),
        (services.MEDIA2, "GetProfiles"),
    ],
)
@FUZZ
@given(data=st.one_of(messages, mutated(ANSWER)))
def test_any_soap_answer_is_read_or_refused_with_a_camera_error(
    namespace: str, operation: str, data: bytes
) -> None:
    try:
        answer = asyncio.run(_answer(namespace, operation, data))
    except services.CameraError:
        return
    _read(answer)


@FUZZ
@given(text=st.text())
def test_any_camera_label_is_one_printable_bounded_line(text: str) -> None:
    label = answers.label(text)
    if label is not None:
        assert label.isprintable()
        assert label == label.strip()
        assert 0 < len(label) <= answers.MAX_LABEL


txt_keys = st.one_of(st.binary(max_size=20), st.sampled_from([b"", b"=", b"key", b"KEY", b"k y"]))
txt_values = st.one_of(st.none(), st.binary(max_size=300))


@FUZZ
@given(
    properties=st.dictionaries(txt_keys, txt_values, max_size=8),
    name=st.text(
        st.characters(min_codepoint=0x80, max_codepoint=0xD7FF) | st.sampled_from("az09 -_"),
        min_size=1,
        max_size=20,
    ),
    port=st.integers(0, 65535),
)
def test_any_txt_record_gives_env_safe_properties(
    properties: dict[bytes, bytes | None], name: str, port: int
) -> None:
    service_type = "_http._tcp.local."
    try:
        info = AsyncServiceInfo(
            service_type, f"{name}.{service_type}", port=port, properties=properties, server="h."
        )
    except BadTypeInNameException:
        reject()  # zeroconf itself refuses such a name: it never reaches the handler
    found = service_of(info)
    props = mdns.properties(found)
    assert all(is_env_name(key) for key in props)
    assert all(isinstance(value, str) for value in props.values())
    details = mdns.details_of(
        "serviceTypes: [_http._tcp.local.]\n"
        "names: {action: Exclude, items: ['^x']}\n"
        "txtRecords: {key: {items: ['.*']}}"
    )
    mdns.devices([found], details)
