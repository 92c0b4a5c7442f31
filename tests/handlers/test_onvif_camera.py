"""Pure: onvif details, filters, properties, credentials and reading answers."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace as ns

import pytest

from akri.discovery.model import InvalidDetails, InvalidProperties
from akri.discovery_handlers.onvif import answers
from akri.discovery_handlers.onvif.camera import (
    Camera,
    answered_passes,
    call_refused,
    details_of,
    device,
    host_address,
    with_zone,
)
from akri.discovery_handlers.onvif.credentials import Credentials, credential_table, credentials_for

URL = "http://10.0.0.5:80/onvif/device_service"


def test_defaults_are_akris() -> None:
    details = details_of("")
    assert details.discovery_timeout_seconds == 1
    assert details.interface_address is None
    assert details.ip_addresses is None
    assert details_of("discoveryTimeoutSeconds: 2").discovery_timeout_seconds == 2


def test_device_id_and_properties() -> None:
    information = {"MANUFACTURER": "Acme", "SERIAL_NUMBER": "42"}
    camera = Camera(
        URL, "abc", "AA:BB", {"Main Stream": "rtsp://a", "sub": "rtsp://b"}, information
    )
    result = device(camera)
    assert result.id == f"{URL}-abc"
    assert result.properties == {
        "ONVIF_DEVICE_SERVICE_URL": URL,
        "ONVIF_DEVICE_UUID": "abc",
        "ONVIF_DEVICE_IP_ADDRESS": "10.0.0.5",
        "ONVIF_DEVICE_MAC_ADDRESS": "AA:BB",
        "ONVIF_DEVICE_MANUFACTURER": "Acme",
        "ONVIF_DEVICE_SERIAL_NUMBER": "42",
        "ONVIF_DEVICE_STREAM_URI_MAIN_STREAM": "rtsp://a",
        "ONVIF_DEVICE_STREAM_URI_SUB": "rtsp://b",
    }


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("  Acme Optics ", "Acme Optics"),
        ("Acme\r\nX-Injected: 1", "Acme X-Injected: 1"),  # no line breaks reach an env var
        ("a\tb\u2028c\u200bd\x85e", "a b c d e"),  # tabs, separators, format characters
        ("\n \t", None),
        ("x" * 10_000, "x" * answers.MAX_LABEL),
        ("y" * (answers.MAX_LABEL - 1) + " z", "y" * (answers.MAX_LABEL - 1)),
        (42, None),
        (None, None),
    ],
)
def test_camera_labels_are_printable_one_line_and_bounded(given: object, kept: str | None) -> None:
    assert answers.label(given) == kept


def test_device_information_keeps_what_the_camera_told() -> None:
    answer = ns(Manufacturer="Acme", Model=" ", FirmwareVersion="1.0", SerialNumber=None)
    assert answers.device_information(answer) == {"MANUFACTURER": "Acme", "FIRMWARE_VERSION": "1.0"}
    assert answers.device_information(None) == {}


@pytest.mark.parametrize(
    ("url", "address"),
    [
        (URL, "10.0.0.5"),
        ("http://[fe80::1]/x", "fe80::1"),
        ("http://[fe80::1%25eth0]:80/x", "fe80::1%eth0"),  # a link-local zone, as URLs write it
        ("http://cam.local/x", None),
    ],
)
def test_ip_address_is_the_service_url_host(url: str, address: str | None) -> None:
    assert host_address(url) == address


@pytest.mark.parametrize(
    ("url", "zone", "reached"),
    [
        ("http://[fe80::a:2]:8080/onvif/x?y=1", "eth0", "http://[fe80::a:2%eth0]:8080/onvif/x?y=1"),
        ("http://u:p@[FE80::2]/x", "eth0", "http://u:p@[fe80::2%eth0]/x"),
        ("http://[fe80::2%25wlan0]/x", "eth0", "http://[fe80::2%wlan0]/x"),  # its own zone kept
        ("http://[fe80::2%wlan0]/x", None, "http://[fe80::2%wlan0]/x"),
        ("http://[fe80::2]/x", None, "http://[fe80::2]/x"),  # no zone to give
        ("http://[fd00::2]/x", "eth0", "http://[fd00::2]/x"),  # not link-local
        ("http://[::1]/x", "eth0", "http://[::1]/x"),
        ("http://10.0.0.5/x", "eth0", "http://10.0.0.5/x"),
        ("http://cam.local/x", "eth0", "http://cam.local/x"),
        ("not a url", "eth0", "not a url"),
        ("http://[fe80::1/x", "eth0", "http://[fe80::1/x"),  # unparsable: left to fail later
    ],
)
def test_link_local_hosts_are_reached_through_the_zone(
    url: str, zone: str | None, reached: str
) -> None:
    assert with_zone(url, zone) == reached


@pytest.mark.parametrize("name", ["eth0", "enp0s31f6", "br-1a2b.100", "x" * 15])
def test_ipv6_interface_takes_interface_names(name: str) -> None:
    assert details_of(f"ipv6Interface: {name}").ipv6_interface == name


@pytest.mark.parametrize(
    "name", ["", "x" * 16, "eth 0", "a/b", "fe80::1", "eth0%1", "a#b", "u@h", "a]b", "1"]
)
def test_ipv6_interface_refuses_what_cannot_name_an_interface(name: str) -> None:
    with pytest.raises(InvalidDetails, match="ipv6Interface"):
        details_of(f"ipv6Interface: {name!r}" if name != "1" else "ipv6Interface: 1")


def test_a_service_url_whose_host_is_a_name_is_never_called() -> None:
    """Only an IP address can be the datagram's sender, or matched by an ipAddresses filter."""
    for details in ("", "ipAddresses: {action: Exclude, items: [x]}", "allowLocalAddresses: true"):
        refused = call_refused("http://cam.local/onvif", "cam.local", details_of(details))
        assert refused == "its host is not an IP address"


def test_an_unknown_mac_address_is_refused_by_a_mac_filter() -> None:
    camera = Camera("http://10.0.0.5/onvif", "abc")
    assert answered_passes(camera, details_of(""))
    assert not answered_passes(camera, details_of("macAddresses: {action: Exclude, items: [x]}"))


def test_credentials_most_specific_first() -> None:
    cameras = {
        "urn:uuid:AAA": {"username": "list", "password": "cA==", "base64encoded": True},
        "bbb": {"username": "plain", "password": "p"},
    }
    refs = {"ccc": {"username_ref": "cam_user", "password_ref": "cam_pass"}}
    table = credential_table(
        {
            "username_aaa": b"flat",
            "password_aaa": b"f",
            "username_default": b"anyone",
            "device_credential_list": b'["cameras"]',
            "cameras": json.dumps(cameras).encode(),
            "device_credential_ref_list": b'["refs"]',
            "refs": json.dumps(refs).encode(),
            "cam_user": b"ref",
            "cam_pass": b"r",
        }
    )
    assert credentials_for(table, "aaa") == Credentials("flat", "f")
    assert credentials_for(table, "bbb") == Credentials("plain", "p")
    assert credentials_for(table, "ccc") == Credentials("ref", "r")
    assert credentials_for(table, "ddd") == Credentials("anyone", "")
    assert credentials_for({}, "ddd") is None
    assert credential_table(
        {
            "device_credential_list": b'["c"]',
            "c": b'{"x": {"username": "u", "password": "cA==", "base64encoded": true}}',
        }
    )["x"] == Credentials("u", "p")


def test_passwords_stay_out_of_reprs_and_messages() -> None:
    assert "hunter2" not in repr(Credentials("admin", "hunter2"))
    bad = {
        "device_credential_list": b'["c"]',
        "c": b'{"x": {"username": 1, "password": "hunter2"}}',
    }
    with pytest.raises(InvalidProperties) as error:
        credential_table(bad)
    assert "hunter2" not in str(error.value)


@pytest.mark.parametrize(
    ("properties", "reason"),
    [
        ({"device_credential_list": b"{"}, "not valid JSON"),
        ({"device_credential_list": b'{"a": 1}'}, "JSON list"),
        ({"device_credential_list": b'["c"]'}, "missing property 'c'"),
        ({"device_credential_list": b'["c"]', "c": b"[]"}, "map device uuids"),
        ({"device_credential_ref_list": b'["c"]', "c": b'{"x": {"username_ref": "u"}}'}, "'u'"),
        (
            {
                "device_credential_list": b'["c"]',
                "c": b'{"x": {"username": "u", "password": "!", "base64encoded": true}}',
            },
            "not base64",
        ),
    ],
)
def test_unusable_credentials_are_refused(properties: dict[str, bytes], reason: str) -> None:
    with pytest.raises(InvalidProperties, match=reason):
        credential_table(properties)


def test_clock_offset_is_the_cameras_utc_clock_ahead_of_ours() -> None:
    now = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    told = ns(
        UTCDateTime=ns(Date=ns(Year=2024, Month=1, Day=2), Time=ns(Hour=3, Minute=14, Second=5))
    )
    assert answers.clock_offset(told, now) == timedelta(minutes=10)
    assert answers.clock_offset(ns(UTCDateTime=None), now) == timedelta()
    broken = ns(UTCDateTime=ns(Date=ns(Year=2024, Month=13, Day=2), Time=told.UTCDateTime.Time))
    assert answers.clock_offset(broken, now) == timedelta()


def test_mac_address_prefers_enabled_interfaces() -> None:
    interfaces = [
        ns(Enabled=False, Info=ns(HwAddress="off")),
        ns(Enabled=True, Info=None),
        ns(Enabled=True, Info=ns(HwAddress=" on ")),
    ]
    assert answers.mac_address(interfaces) == "on"
    assert answers.mac_address([ns(Enabled=False, Info=ns(HwAddress="off"))]) == "off"
    assert answers.mac_address(None) is None


def test_services_profiles_and_stream_uris_are_read_leniently() -> None:
    listed = [ns(Namespace="urn:a", XAddr="http://a"), ns(Namespace="urn:b", XAddr=None)]
    assert answers.service_addresses(listed) == {"urn:a": "http://a"}
    assert answers.media_address(ns(Media=ns(XAddr="http://m"))) == "http://m"
    assert answers.media_address(ns(Media=None)) is None
    assert answers.profile_tokens([ns(token="t1"), ns(token=None), ns()]) == ["t1"]
    assert answers.stream_uri(ns(Uri="rtsp://a")) == "rtsp://a"
    assert answers.stream_uri("rtsp://b") == "rtsp://b"
    assert answers.stream_uri(ns(Uri="")) is None
