"""The onvif handler against fake cameras on 127.0.0.1 (loopback multicast, TTL 1)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from akri.discovery.entry_points import handler_factory
from akri.discovery.model import Device, InvalidDetails, InvalidProperties
from akri.discovery_handlers.onvif.handler import Onvif, from_environment
from tests.handlers.fake_onvif import (
    LOOPBACK,
    MEDIA,
    MEDIA2,
    ON_LOOPBACK,
    FakeCamera,
    free_udp_port,
)
from tests.handlers.streams import next_list

SOAP_ENV = "http://www.w3.org/2003/05/soap-envelope"
UUID = "3fa1fe68-b915-4053-a3e1-ac15a21f5f91"
OTHER = "0b5c5c3a-5e7e-4b52-9a3b-5e0a1d2c3b4f"
QUICK = "discoveryTimeoutSeconds: 0.2\ninterfaceAddress: 127.0.0.1\n" + ON_LOOPBACK
ROUNDS = QUICK + "probeIntervalSeconds: 1\n"  # the least allowed
ONCE = QUICK + "probeIntervalSeconds: 3600\n"  # only Hello and Bye change the list later
CREDENTIALS = {"username_default": b"admin", "password_default": b"secret"}


@pytest.fixture
def port() -> int:
    """A private WS-Discovery port, so nothing else on the machine takes part."""
    return free_udp_port()


@pytest.fixture
async def camera(port: int) -> AsyncIterator[FakeCamera]:
    async with FakeCamera(port=port, uuid=UUID) as fake:
        yield fake


def discover(
    port: int, details: str, properties: Mapping[str, bytes] | None = None
) -> AsyncGenerator[list[Device], None]:
    return Onvif(port=port, request_timeout=2).discover(details, properties or {})


async def until(lists: AsyncGenerator[list[Device], None], ids: list[str]) -> list[Device]:
    """Read lists until one has exactly `ids` (an intermediate list may come first)."""
    while True:
        devices = await next_list(lists)
        if [d.id for d in devices] == ids:
            return devices


def device_id(camera: FakeCamera) -> str:
    return f"{camera.xaddr}-{camera.uuid}"


async def test_a_camera_is_found_with_akri_id_and_properties(port: int, camera: FakeCamera) -> None:
    async with aclosing(discover(port, ONCE)) as lists:
        (device,) = await next_list(lists)
    assert device.id == f"{camera.xaddr}-{UUID}"
    assert device.properties == {
        "ONVIF_DEVICE_SERVICE_URL": camera.xaddr,
        "ONVIF_DEVICE_UUID": UUID,
        "ONVIF_DEVICE_IP_ADDRESS": LOOPBACK,
    }
    assert camera.operations == ["GetSystemDateAndTime"]


async def test_credentials_add_what_the_camera_is_its_mac_and_stream_uris(
    port: int, camera: FakeCamera
) -> None:
    async with aclosing(discover(port, ONCE, CREDENTIALS)) as lists:
        (device,) = await next_list(lists)
    assert device.properties == {
        "ONVIF_DEVICE_SERVICE_URL": camera.xaddr,
        "ONVIF_DEVICE_UUID": UUID,
        "ONVIF_DEVICE_IP_ADDRESS": LOOPBACK,
        "ONVIF_DEVICE_MAC_ADDRESS": "00:11:22:AA:BB:CC",
        "ONVIF_DEVICE_MANUFACTURER": "Acme Optics",
        "ONVIF_DEVICE_MODEL": "C-100",
        "ONVIF_DEVICE_FIRMWARE_VERSION": "2.4.1",
        "ONVIF_DEVICE_SERIAL_NUMBER": "SN0042",
        "ONVIF_DEVICE_HARDWARE_ID": "hw-7",
        "ONVIF_DEVICE_STREAM_URI_MAIN_1": "rtsp://127.0.0.1:554/main",
    }
    assert camera.refused == []


async def test_hostile_device_information_is_cleaned_or_left_out(
    port: int, camera: FakeCamera
) -> None:
    camera.information = {
        "Manufacturer": "Acme&#13;&#10;X-Injected: yes&#x2028;",  # line breaks, as XML allows
        "Model": "M" * 200_000,  # under the 1 MiB answer cap, far over a label's
        "FirmwareVersion": "&#9; ",
        "SerialNumber": "&lt;script&gt;",
    }
    async with aclosing(discover(port, ONCE, CREDENTIALS)) as lists:
        (device,) = await next_list(lists)
    shown = {k: v for k, v in device.properties.items() if k.startswith("ONVIF_DEVICE_")}
    assert shown["ONVIF_DEVICE_MANUFACTURER"] == "Acme X-Injected: yes"
    assert shown["ONVIF_DEVICE_MODEL"] == "M" * 128
    assert shown["ONVIF_DEVICE_SERIAL_NUMBER"] == "<script>"
    assert "ONVIF_DEVICE_FIRMWARE_VERSION" not in shown
    assert "ONVIF_DEVICE_HARDWARE_ID" not in shown
    assert shown["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"


@pytest.mark.parametrize(
    ("unsupported", "unreadable"),
    [({"GetDeviceInformation"}, None), (set(), "&#27;not XML 1.0")],
)
async def test_a_camera_without_device_information_still_gives_mac_and_streams(
    port: int,
    camera: FakeCamera,
    caplog: pytest.LogCaptureFixture,
    unsupported: set[str],
    unreadable: str | None,
) -> None:
    camera.unsupported = unsupported
    if unreadable is not None:
        camera.information["Model"] = unreadable
    async with aclosing(discover(port, ONCE, CREDENTIALS)) as lists:
        (device,) = await next_list(lists)
    assert not any(k.endswith(("MANUFACTURER", "MODEL")) for k in device.properties)
    assert device.properties["ONVIF_DEVICE_MAC_ADDRESS"] == "00:11:22:AA:BB:CC"
    assert device.properties["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"
    assert "no device information" in caplog.text


async def test_a_camera_whose_clock_is_ten_minutes_off_accepts_our_tokens(port: int) -> None:
    async with (
        FakeCamera(port=port, uuid=UUID, clock_offset=timedelta(minutes=10)) as camera,
        aclosing(discover(port, ONCE, CREDENTIALS)) as lists,
    ):
        (device,) = await next_list(lists)
    assert device.properties["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"
    assert camera.refused == []


@pytest.mark.parametrize(
    ("offered", "unsupported", "used"),
    [
        ((MEDIA,), set(), MEDIA),
        ((MEDIA, MEDIA2), set(), MEDIA2),
        ((MEDIA2,), set(), MEDIA2),
        ((MEDIA,), {"GetServices"}, MEDIA),  # older cameras: GetCapabilities names Media1
    ],
)
async def test_stream_uris_from_media2_when_offered_media1_otherwise(
    port: int, offered: tuple[str, ...], unsupported: set[str], used: str
) -> None:
    async with FakeCamera(port=port, uuid=UUID, media=offered) as camera:
        camera.unsupported = unsupported
        async with aclosing(discover(port, ONCE, CREDENTIALS)) as lists:
            (device,) = await next_list(lists)
    assert device.properties["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"
    assert camera.called[-2:] == [(used, "GetProfiles"), (used, "GetStreamUri")]
    assert ("GetCapabilities" in camera.operations) == ("GetServices" in unsupported)


async def test_a_camera_on_ipv6(port: int) -> None:
    async with (
        FakeCamera(port=port, uuid=UUID, host="::1") as camera,
        # Announced over IPv4 (from 127.0.0.1): only an operator's list lets another host in.
        aclosing(discover(port, ONCE + "ipAddresses: {items: ['::1']}", CREDENTIALS)) as lists,
    ):
        (device,) = await next_list(lists)
    assert camera.xaddr.startswith("http://[::1]:")
    assert device.id == f"{camera.xaddr}-{UUID}"
    assert device.properties["ONVIF_DEVICE_IP_ADDRESS"] == "::1"
    assert device.properties["ONVIF_DEVICE_MAC_ADDRESS"] == "00:11:22:AA:BB:CC"


async def test_credential_list_property_form(port: int, camera: FakeCamera) -> None:
    properties = {
        "device_credential_list": b'["cameras"]',
        "cameras": json.dumps(
            {
                f"urn:uuid:{UUID.upper()}": {
                    "username": "admin",
                    "password": "c2VjcmV0",
                    "base64encoded": True,
                }
            }
        ).encode(),
    }
    async with aclosing(discover(port, ONCE, properties)) as lists:
        (device,) = await next_list(lists)
    assert "ONVIF_DEVICE_MAC_ADDRESS" in device.properties


async def test_wrong_credentials_list_the_camera_without_authenticated_properties(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture
) -> None:
    wrong = {"username_default": b"admin", "password_default": b"guess"}
    async with aclosing(discover(port, ONCE, wrong)) as lists:
        (device,) = await next_list(lists)
    assert set(device.properties) == {
        "ONVIF_DEVICE_SERVICE_URL",
        "ONVIF_DEVICE_UUID",
        "ONVIF_DEVICE_IP_ADDRESS",
    }
    assert "Sender not authorized" in caplog.text
    assert "guess" not in caplog.text


@pytest.mark.parametrize(
    ("details", "found"),
    [
        ("scopes: {items: [onvif://www.onvif.org/name/Lobby]}", True),
        ("scopes: {items: [onvif://www.onvif.org/name/Garage]}", False),
        ("scopes: {action: Exclude, items: [ONVIF://www.onvif.org/name/lobby]}", False),
        (f"uuids: {{items: [{UUID.upper()}]}}", True),
        (f"uuids: {{action: Exclude, items: [{UUID}]}}", False),
        ("ipAddresses: {items: [127.0.0.1]}", True),
        ("ipAddresses: {action: Exclude, items: [127.0.0.1]}", False),
        ("ipAddresses: {items: [10.0.0.1]}", False),
        ("macAddresses: {items: ['00:11:22:aa:bb:cc']}", True),
        ("macAddresses: {action: Exclude, items: ['00:11:22:AA:BB:CC']}", False),
        ("macAddresses: {action: Exclude, items: []}", True),
    ],
)
async def test_filters(port: int, camera: FakeCamera, details: str, found: bool) -> None:
    async with aclosing(discover(port, ONCE + details, CREDENTIALS)) as lists:
        devices = await next_list(lists)
    assert [d.id for d in devices] == ([device_id(camera)] if found else [])


async def test_a_mac_filter_refuses_cameras_whose_mac_is_unknown(
    port: int, camera: FakeCamera
) -> None:
    details = ONCE + "macAddresses: {action: Exclude, items: ['ff:ff:ff:ff:ff:ff']}"
    async with aclosing(discover(port, details)) as lists:
        assert await next_list(lists) == []


async def test_a_camera_that_stops_answering_disappears_at_the_next_round(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture
) -> None:
    async with aclosing(discover(port, ROUNDS)) as lists:
        await until(lists, [device_id(camera)])
        camera.answers_soap = False
        assert await until(lists, []) == []
        camera.answers_soap = True
        await until(lists, [device_id(camera)])
    assert "does not answer" in caplog.text


async def test_a_camera_too_slow_to_answer_is_not_listed(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture
) -> None:
    camera.stalled = True
    lists = Onvif(port=port, request_timeout=0.2).discover(ONCE, {})
    async with aclosing(lists):
        assert await next_list(lists) == []
    assert "GetSystemDateAndTime: no answer in time" in caplog.text


HUGE = b"<a>" + b"x" * (1 << 20) + b"</a>"
BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
    b'<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]><l>&b;</l>'
)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (b"<s:Envelope><s:Body>", "invalid XML"),
        (b"not xml at all", "invalid XML"),
        (BILLION_LAUGHS, "DTDForbidden"),
        (HUGE, "larger than 1048576 bytes"),
    ],
)
async def test_malformed_hostile_and_huge_answers_are_refused(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture, answer: bytes, reason: str
) -> None:
    camera.raw_answer = answer
    async with aclosing(discover(port, ONCE)) as lists:
        assert await next_list(lists) == []
    assert reason in caplog.text
    assert "does not answer" in caplog.text


async def test_a_large_answer_under_the_cap_is_read_whole(port: int, camera: FakeCamera) -> None:
    padding = " " * 500_000  # arrives in many chunks
    camera.raw_answer = (
        f'<s:Envelope xmlns:s="{SOAP_ENV}"><s:Body>{padding}<GetSystemDateAndTimeResponse '
        'xmlns="http://www.onvif.org/ver10/device/wsdl"><SystemDateAndTime/>'
        "</GetSystemDateAndTimeResponse></s:Body></s:Envelope>"
    ).encode()
    async with aclosing(discover(port, ONCE)) as lists:
        assert [d.id for d in await next_list(lists)] == [device_id(camera)]


async def test_a_camera_that_stops_answering_probes_disappears(
    port: int, camera: FakeCamera
) -> None:
    async with aclosing(discover(port, ROUNDS)) as lists:
        await until(lists, [device_id(camera)])
        camera.answers_probes = False
        await until(lists, [])


async def test_a_probe_match_without_service_urls_is_resolved(
    port: int, camera: FakeCamera
) -> None:
    camera.xaddrs_in_probe_matches = False
    async with aclosing(discover(port, ONCE)) as lists:
        (device,) = await next_list(lists)
    assert device.id == device_id(camera)
    assert camera.resolves == 1


async def test_hello_adds_and_bye_removes_between_probes(port: int, camera: FakeCamera) -> None:
    camera.answers_probes = False
    async with aclosing(discover(port, ONCE)) as lists:
        assert await next_list(lists) == []
        camera.hello()
        await until(lists, [device_id(camera)])
        camera.bye()
        await until(lists, [])


async def test_a_hello_without_service_urls_is_resolved_at_once(
    port: int, camera: FakeCamera
) -> None:
    camera.answers_probes = False
    async with aclosing(discover(port, ONCE)) as lists:
        assert await next_list(lists) == []
        camera.hello(xaddrs=False)
        await until(lists, [device_id(camera)])
    assert camera.resolves == 1


async def test_two_cameras_then_a_bye_from_one(port: int, camera: FakeCamera) -> None:
    async with (
        FakeCamera(port=port, uuid=OTHER, scopes=()) as second,
        aclosing(discover(port, ONCE)) as lists,
    ):
        assert [d.id for d in await next_list(lists)] == sorted(
            [device_id(camera), device_id(second)]
        )
        camera.bye()
        await until(lists, [device_id(second)])


async def test_malformed_and_unrelated_probe_matches_are_ignored(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with FakeCamera(port=port, uuid=OTHER) as stranger:
        stranger.answers_probes = False
        camera.extra_probe_replies = [
            b"not xml",
            b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>',
            stranger.probe_match("urn:uuid:someone-elses-probe"),
        ]
        async with aclosing(discover(port, ONCE)) as lists:
            (device,) = await next_list(lists)
    assert device.id == device_id(camera)
    assert "not well-formed XML" in caplog.text
    assert "DTD" in caplog.text


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        ("discoveryTimeoutSeconds: 0", "discoveryTimeoutSeconds"),
        ("probeIntervalSeconds: -1", "probeIntervalSeconds"),
        ("probeIntervalSeconds: 0.5", "greater than or equal to 1"),
        ("interfaceAddress: eth0", "interfaceAddress"),
        ("scopes: [a]", "scopes"),
        ("uuids: {items: [a], action: Maybe}", "uuids.action"),
        ("cameras: yes", "cameras"),
        ("[1, 2]", "must be a mapping"),
    ],
)
async def test_bad_details_are_refused_before_any_list(details: str, reason: str) -> None:
    lists = Onvif().discover(details, {})
    with pytest.raises(InvalidDetails, match=reason):
        await anext(lists)


async def test_unusable_credential_properties_are_refused() -> None:
    lists = Onvif().discover("", {"device_credential_list": b'["missing"]'})
    with pytest.raises(InvalidProperties, match="missing"):
        await anext(lists)


def test_the_library_is_imported_only_when_onvif_discovery_starts() -> None:
    code = (
        "import sys, akri.discovery_handlers.main; "
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('onvif', 'zeep')))"
    )
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]"


def test_registered_and_configured_from_the_environment() -> None:
    handler = handler_factory("onvif")(None, {"ONVIF_INTERFACE_ADDRESS": LOOPBACK})
    assert handler.name == "onvif"
    assert handler.shared is True
    assert from_environment(False, {}).shared is False


async def test_the_example_configuration_finds_lobby_cameras_only(port: int) -> None:
    example = Path(__file__).parents[2] / "crds" / "examples" / "onvif.yaml"
    spec = yaml.safe_load(example.read_text())["spec"]
    details = spec["discoveryHandler"]["discoveryDetails"] + ON_LOOPBACK
    handler = Onvif(port=port, interface_address=LOOPBACK)
    async with (
        FakeCamera(port=port, uuid=UUID) as lobby,
        FakeCamera(port=port, uuid=OTHER, scopes=("onvif://www.onvif.org/name/Garage",)),
        aclosing(handler.discover(details, {})) as lists,
    ):
        assert [d.id for d in await next_list(lists)] == [device_id(lobby)]
