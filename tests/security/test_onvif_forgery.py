"""Attack: a host on the link makes the onvif handler call, and sign for, a host of its choice.

Each test is a real exchange on loopback: fake cameras (tests/handlers/fake_onvif.py) answer
WS-Discovery from the addresses they are given and serve SOAP, and the handler probes them.
Loopback is itself a refused address, so the tests that are about something else allow it,
as an operator would have to.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing

import pytest

from akri.discovery.model import Device
from akri.discovery_handlers.onvif.camera import Details, call_refused
from akri.discovery_handlers.onvif.handler import Onvif
from tests.handlers.fake_onvif import LOOPBACK, ON_LOOPBACK, FakeCamera, free_udp_port
from tests.handlers.streams import next_list

UUID = "3fa1fe68-b915-4053-a3e1-ac15a21f5f91"
ATTACKER_UUID = "0b5c5c3a-5e7e-4b52-9a3b-5e0a1d2c3b4f"
ONCE = "discoveryTimeoutSeconds: 0.2\ninterfaceAddress: 127.0.0.1\nprobeIntervalSeconds: 3600\n"
CREDENTIALS = {"username_default": b"admin", "password_default": b"secret"}


@pytest.fixture
def port() -> int:
    return free_udp_port()


def discover(port: int, details: str) -> aclosing[AsyncGenerator[list[Device], None]]:
    return aclosing(Onvif(port=port, request_timeout=2).discover(details, CREDENTIALS))


async def test_a_probe_match_naming_another_host_is_not_called(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """From 127.0.0.2, a ProbeMatch whose XAddr is a service at 127.0.0.1: the handler would
    have sent it requests signed with the cameras' credentials, from the node's network."""
    caplog.set_level(logging.WARNING)
    async with (
        FakeCamera(port=port, uuid=UUID) as victim,
        FakeCamera(port=port, uuid=ATTACKER_UUID, discovery_address="127.0.0.2") as attacker,
    ):
        victim.answers_probes = False
        attacker.xaddr = victim.xaddr  # the forged service URL
        async with discover(port, ONCE + ON_LOOPBACK) as lists:
            assert await next_list(lists) == []
    assert victim.operations == []
    assert attacker.operations == []
    assert f"announced by 127.0.0.2, not by {LOOPBACK} itself" in caplog.text


async def test_a_probe_match_from_its_own_host_is_called(port: int) -> None:
    """The same exchange with an honest sender: the rule refuses the forgery only."""
    async with (
        FakeCamera(port=port, uuid=UUID) as camera,
        discover(port, ONCE + ON_LOOPBACK) as lists,
    ):
        assert [d.id for d in await next_list(lists)] == [f"{camera.xaddr}-{UUID}"]
    assert "GetNetworkInterfaces" in camera.operations


async def test_an_operator_may_list_a_host_announced_by_another(port: int) -> None:
    async with (
        FakeCamera(port=port, uuid=UUID) as camera,
        FakeCamera(port=port, uuid=ATTACKER_UUID, discovery_address="127.0.0.2") as announcer,
    ):
        camera.answers_probes = False
        announcer.xaddr = camera.xaddr
        listed = ONCE + ON_LOOPBACK + f"ipAddresses: {{items: [{LOOPBACK}]}}\n"
        async with discover(port, listed) as lists:
            assert [d.id for d in await next_list(lists)] == [f"{camera.xaddr}-{ATTACKER_UUID}"]


async def test_a_loopback_camera_is_not_called_unless_allowed(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeCamera(port=port, uuid=UUID) as camera, discover(port, ONCE) as lists:
        assert await next_list(lists) == []
    assert camera.operations == []
    assert "127.0.0.1 is a loopback or link-local address" in caplog.text


async def test_the_ip_filter_refuses_before_any_call(port: int) -> None:
    """An excluded camera used to get GetSystemDateAndTime and every signed call first."""
    async with FakeCamera(port=port, uuid=UUID) as camera:
        excluded = ONCE + ON_LOOPBACK + f"ipAddresses: {{action: Exclude, items: [{LOOPBACK}]}}"
        async with discover(port, excluded) as lists:
            assert await next_list(lists) == []
    assert camera.operations == []


async def test_a_media_service_on_another_host_is_not_called(
    port: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A camera's GetServices names a media service elsewhere: no signed call goes there."""
    async with (
        FakeCamera(port=port, uuid=UUID) as camera,
        FakeCamera(port=port, uuid=ATTACKER_UUID, host="127.0.0.3") as elsewhere,
    ):
        elsewhere.answers_probes = False
        camera.media_xaddr = elsewhere.media_xaddr
        async with discover(port, ONCE + ON_LOOPBACK) as lists:
            (device,) = await next_list(lists)
    assert elsewhere.operations == []
    assert "ONVIF_DEVICE_MAC_ADDRESS" not in device.properties  # streams and MAC come together
    assert f"{elsewhere.media_xaddr} is not on the camera's host, not called" in caplog.text


async def test_credentials_in_stream_uris_do_not_reach_instance_properties(port: int) -> None:
    streams = {"main_1": "rtsp://admin:secret@127.0.0.1:554/main", "sub": "rtsp://u@[::1]/s"}
    async with (
        FakeCamera(port=port, uuid=UUID, streams=streams),
        discover(port, ONCE + ON_LOOPBACK) as lists,
    ):
        (device,) = await next_list(lists)
    assert device.properties["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"
    assert device.properties["ONVIF_DEVICE_STREAM_URI_SUB"] == "rtsp://[::1]/s"
    assert not any("secret" in value for value in device.properties.values())


@pytest.mark.parametrize(
    ("host", "details", "refused"),
    [
        ("169.254.169.254", {}, "link-local"),
        ("[fe80::1]", {}, "link-local"),
        ("0.0.0.0", {}, "loopback or link-local"),
        ("224.0.0.1", {}, "loopback or link-local"),
        ("[::1]", {}, "loopback"),
        ("camera.local", {}, "not an IP address"),
        ("[fe80::1]", {"ipv6Interface": "eth0"}, None),
        ("169.254.169.254", {"allowLocalAddresses": True}, None),
        ("192.0.2.7", {}, None),
    ],
)
def test_local_addresses_are_refused_unless_configured(
    host: str, details: dict[str, object], refused: str | None
) -> None:
    """Each announced by its own host: only the address itself decides."""
    reason = call_refused(
        f"http://{host}/onvif/device_service", host.strip("[]"), Details.model_validate(details)
    )
    assert reason is None if refused is None else refused in (reason or "")
