"""The onvif handler over IPv6: WS-Discovery on ff02::c and SOAP to link-local cameras.

IPv6 multicast needs a link with the MULTICAST flag, which this machine's loopback lacks, and
probes must never leave the machine. So the link is a veth pair in a private network namespace
(`unshare -rn`, root or not): the handler probes from one end, a fake camera answers on the
other with a link-local address its XAddrs give without a zone, as real cameras do. The outer
test builds the namespace and runs this file's other tests inside it, where `LINK_ENV` names
the two ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import aclosing
from pathlib import Path

import pytest

from akri.discovery.model import HandlerUnavailable
from akri.discovery_handlers.onvif import probe
from akri.discovery_handlers.onvif.handler import Onvif, from_environment
from tests.handlers.fake_onvif import FakeCamera, free_udp_port
from tests.handlers.streams import next_list
from tests.handlers.test_onvif_system import CREDENTIALS, UUID, until

LINK_ENV = "AKRI_TEST_IPV6_LINK"
LINK = os.environ.get(LINK_ENV, "").split()  # [ours, the camera's] inside the namespace
OURS, CAMERA_ADDRESS = "fe80::a:1", "fe80::a:2"
SETUP = (
    "ip link set lo up && ip link add akri0 type veth peer name akri1"
    " && ip link set akri0 up && ip link set akri1 up"
    f" && ip -6 addr add {OURS}/64 dev akri0 nodad"
    f" && ip -6 addr add {CAMERA_ADDRESS}/64 dev akri1 nodad"
)
IPV4_SOCKET_OPTIONS = (socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, socket.IP_MULTICAST_IF)
IPV6_SOCKET_OPTIONS = (socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, socket.IPV6_MULTICAST_IF)
inside = pytest.mark.skipif(not LINK, reason=f"run inside the namespace (see {__name__})")


def details(ipv6_interface: str) -> str:
    # IPv4 is probed too, on loopback (the namespace has no other IPv4 route).
    return (
        "discoveryTimeoutSeconds: 0.3\nprobeIntervalSeconds: 3600\n"
        f"interfaceAddress: 127.0.0.1\nipv6Interface: {ipv6_interface}\n"
    )  # link-local IPv6 cameras are allowed on the link ipv6Interface names


@pytest.mark.skipif(bool(LINK), reason="the namespace's own runner")
def test_in_a_private_network_namespace_with_a_veth_link() -> None:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs unshare and ip (util-linux, iproute2)")
    tried = subprocess.run(["unshare", "-rn", "sh", "-c", SETUP], capture_output=True, text=True)
    if tried.returncode != 0:
        pytest.skip(f"no private network namespace with a veth pair here: {tried.stderr.strip()}")
    command = f"{SETUP} && exec {sys.executable} -m pytest -q -p no:cacheprovider {__file__}"
    ran = subprocess.run(
        ["unshare", "-rn", "sh", "-c", command],
        env={**os.environ, LINK_ENV: "akri0 akri1"},
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "8 passed, 1 skipped" in ran.stdout, ran.stdout


@pytest.fixture
def port() -> int:
    return free_udp_port()


@pytest.fixture
async def camera(port: int) -> AsyncIterator[FakeCamera]:
    theirs = LINK[1]
    host = f"{CAMERA_ADDRESS}%{theirs}"
    async with FakeCamera(port=port, uuid=UUID, host=host, ipv6_interface=theirs) as fake:
        yield fake


@inside
async def test_a_link_local_camera_is_found_by_an_ipv6_probe(port: int, camera: FakeCamera) -> None:
    ours = LINK[0]
    lists = Onvif(port=port, request_timeout=2).discover(details(ours), CREDENTIALS)
    async with aclosing(lists):
        (device,) = await next_list(lists)
    assert camera.xaddr.startswith(f"http://[{CAMERA_ADDRESS}]:")  # no zone, as announced
    assert device.id == f"{camera.xaddr}-{UUID}"
    assert device.properties["ONVIF_DEVICE_SERVICE_URL"] == camera.xaddr
    assert device.properties["ONVIF_DEVICE_IP_ADDRESS"] == CAMERA_ADDRESS
    # Signed calls reached the camera through our zone, the media service's URL too.
    assert device.properties["ONVIF_DEVICE_MODEL"] == "C-100"
    assert device.properties["ONVIF_DEVICE_STREAM_URI_MAIN_1"] == "rtsp://127.0.0.1:554/main"
    assert camera.refused == []


@inside
async def test_ipv6_hello_without_xaddrs_is_resolved_and_bye_removes(
    port: int, camera: FakeCamera
) -> None:
    ours = LINK[0]
    camera.answers_probes = False
    async with aclosing(Onvif(port=port, request_timeout=2).discover(details(ours), {})) as lists:
        assert await next_list(lists) == []
        camera.hello(xaddrs=False)
        await until(lists, [f"{camera.xaddr}-{UUID}"])
        camera.bye()
        await until(lists, [])
    assert camera.resolves == 1


@inside
async def test_a_node_without_ipv4_multicast_discovers_over_ipv6_alone(
    port: int, camera: FakeCamera, caplog: pytest.LogCaptureFixture
) -> None:
    """No interfaceAddress: IPv4 would take the default route, which the namespace lacks."""
    ipv6_only = f"discoveryTimeoutSeconds: 0.3\nipv6Interface: {LINK[0]}"
    async with aclosing(Onvif(port=port, request_timeout=2).discover(ipv6_only, {})) as lists:
        assert [d.id for d in await next_list(lists)] == [f"{camera.xaddr}-{UUID}"]
    assert "WS-Discovery left out, its group cannot be joined: IPv4: No such device" in caplog.text


@inside
async def test_a_node_without_any_usable_family_makes_the_handler_unavailable(port: int) -> None:
    lists = Onvif(port=port).discover("discoveryTimeoutSeconds: 0.3", {})
    with pytest.raises(HandlerUnavailable, match="cannot listen for WS-Discovery: IPv4: No such"):
        await anext(lists)


@inside
async def test_without_ipv6_interface_the_link_local_camera_is_not_probed(
    port: int, camera: FakeCamera
) -> None:
    no_ipv6 = (
        "discoveryTimeoutSeconds: 0.3\nprobeIntervalSeconds: 3600\ninterfaceAddress: 127.0.0.1"
    )
    async with aclosing(Onvif(port=port, request_timeout=2).discover(no_ipv6, {})) as lists:
        assert await next_list(lists) == []


@pytest.mark.parametrize("named_by", ["details", "environment"])
async def test_an_interface_that_does_not_exist_makes_the_handler_unavailable(
    port: int, named_by: str
) -> None:
    if named_by == "details":
        handler = Onvif(port=port)
    else:
        handler = from_environment(None, {"ONVIF_IPV6_INTERFACE": "akri9"})
    chosen = details("akri9") if named_by == "details" else "interfaceAddress: 127.0.0.1"
    with pytest.raises(HandlerUnavailable, match="no network interface named 'akri9'"):
        await anext(handler.discover(chosen, {}))


async def test_probes_of_both_families_stay_on_the_link(port: int) -> None:
    """TTL and hop limit 1, sent by the chosen interfaces (loopback here, any machine has it)."""
    received: list[object] = []
    for family in probe.families_of(probe.Links("127.0.0.1", "lo"), port):
        transport = await probe.datagrams(family, family.any, received.append, join=False)
        sock = transport.get_extra_info("socket")
        try:
            if family.domain == socket.AF_INET6:
                level, hops, interface = IPV6_SOCKET_OPTIONS
                assert sock.getsockopt(level, interface) == socket.if_nametoindex("lo")
                assert family.group == ("ff02::c", port, 0, socket.if_nametoindex("lo"))
            else:
                level, hops, interface = IPV4_SOCKET_OPTIONS
                assert sock.getsockopt(level, interface, 4) == socket.inet_aton("127.0.0.1")
            assert sock.getsockopt(level, hops) == 1
        finally:
            transport.close()
    assert received == []
