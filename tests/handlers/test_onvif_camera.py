"""Pure: onvif details, filters, properties, credentials and SOAP envelopes."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

import pytest

from akri.agent.discovery.model import InvalidProperties
from akri.discovery_handlers.onvif import soap
from akri.discovery_handlers.onvif.camera import (
    Camera,
    answered_passes,
    details_of,
    device,
    host_address,
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
    camera = Camera(URL, "abc", "AA:BB", {"Main Stream": "rtsp://a", "sub": "rtsp://b"})
    result = device(camera)
    assert result.id == f"{URL}-abc"
    assert result.properties == {
        "ONVIF_DEVICE_SERVICE_URL": URL,
        "ONVIF_DEVICE_UUID": "abc",
        "ONVIF_DEVICE_IP_ADDRESS": "10.0.0.5",
        "ONVIF_DEVICE_MAC_ADDRESS": "AA:BB",
        "ONVIF_DEVICE_STREAM_URI_MAIN_STREAM": "rtsp://a",
        "ONVIF_DEVICE_STREAM_URI_SUB": "rtsp://b",
    }


@pytest.mark.parametrize(
    ("url", "address"),
    [(URL, "10.0.0.5"), ("http://[fe80::1]/x", "fe80::1"), ("http://cam.local/x", None)],
)
def test_ip_address_is_the_service_url_host(url: str, address: str | None) -> None:
    assert host_address(url) == address


def test_an_unknown_ip_address_is_refused_by_an_ip_filter() -> None:
    camera = Camera("http://cam.local/onvif", "abc")
    assert answered_passes(camera, details_of(""))
    assert not answered_passes(camera, details_of("ipAddresses: {action: Exclude, items: [x]}"))


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


def test_username_token_digest_follows_the_profile() -> None:
    nonce, now = b"0123456789abcdef", datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    header = soap.security_header(Credentials("ad<min", "pw"), nonce, now)
    expected = base64.b64encode(
        hashlib.sha1(nonce + b"2024-01-02T03:04:05.678Z" + b"pw").digest()
    ).decode()
    assert f'#PasswordDigest">{expected}</wsse:Password>' in header
    assert "<wsse:Username>ad&lt;min</wsse:Username>" in header
    assert ">pw<" not in header


def test_answers_faults_and_hostile_answers() -> None:
    ok = soap.envelope(
        "<r:GetProfilesResponse xmlns:r='urn:r'><r:Profiles token='t1'/>"
        "<r:Profiles/></r:GetProfilesResponse>"
    )
    assert soap.profile_tokens(soap.response(ok, "GetProfilesResponse")) == ["t1"]
    fault = soap.envelope("<s:Fault><s:Reason><s:Text>nope</s:Text></s:Reason></s:Fault>")
    with pytest.raises(soap.SoapError, match="SOAP fault: nope"):
        soap.response(fault, "GetProfilesResponse")
    with pytest.raises(soap.SoapError, match="without GetStreamUriResponse"):
        soap.response(ok, "GetStreamUriResponse")
    with pytest.raises(soap.SoapError, match="DTD"):
        soap.response(b"<!DOCTYPE a><a/>", "a")


def test_mac_address_prefers_enabled_interfaces() -> None:
    answer = soap.envelope(
        "<r:GetNetworkInterfacesResponse xmlns:r='urn:r'>"
        "<r:NetworkInterfaces><r:Enabled>false</r:Enabled><r:HwAddress>off</r:HwAddress>"
        "</r:NetworkInterfaces><r:NetworkInterfaces><r:Enabled>true</r:Enabled>"
        "<r:Info><r:HwAddress>on</r:HwAddress></r:Info></r:NetworkInterfaces>"
        "</r:GetNetworkInterfacesResponse>"
    )
    interfaces = soap.response(answer, "GetNetworkInterfacesResponse")
    assert soap.mac_address(interfaces) == "on"
