"""The opcua handler's pure part: Akri's details, hostile answers, URLs and devices."""

from __future__ import annotations

import ipaddress

import pytest

from akri.discovery_handlers.opcua.servers import (
    DEFAULT_DISCOVERY_URL,
    MAX_APPLICATION_URLS,
    MAX_APPLICATIONS,
    Application,
    ApplicationType,
    Server,
    answer_of,
    clean,
    details_of,
    devices,
    follow_refused,
    preferred_url,
    with_host,
)

# As Akri's chart renders its OPC UA Configuration (opcua-configuration.yaml).
AKRI_DETAILS = """\
opcuaDiscoveryMethod:
  standard:
    discoveryUrls:
    - opc.tcp://10.1.2.3:4840/
    - opc.tcp://plc-2:48010/
applicationNames:
  action: Exclude
  items: []
"""


def test_akri_details_parse_unchanged() -> None:
    parsed = details_of(AKRI_DETAILS)
    assert parsed.discovery_urls == ["opc.tcp://10.1.2.3:4840/", "opc.tcp://plc-2:48010/"]
    assert parsed.application_names is not None
    assert parsed.application_names.trivial
    assert parsed.discovery_interval_seconds == 10


def test_empty_details_ask_the_local_discovery_server() -> None:
    assert details_of("").discovery_urls == [DEFAULT_DISCOVERY_URL]
    assert details_of("opcuaDiscoveryMethod: {standard: {}}").discovery_urls == [
        DEFAULT_DISCOVERY_URL
    ]


def test_clean_strips_control_format_and_unassigned_characters() -> None:
    assert clean("a\x00b\x1b[31mc\r\n\u202ed\u200be\U000e0001") == "ab[31mcde"
    assert clean("Línea 1 — 温度") == "Línea 1 — 温度"


@pytest.mark.parametrize(
    ("url", "host", "expected"),
    [
        ("opc.tcp://plc.invalid:4840/path", "10.0.0.5", "opc.tcp://10.0.0.5:4840/path"),
        ("opc.tcp://0.0.0.0:4840", "fd00::1", "opc.tcp://[fd00::1]:4840"),
        ("opc.tcp://user@plc:1/", "127.0.0.1", "opc.tcp://user@127.0.0.1:1/"),
    ],
)
def test_with_host(url: str, host: str, expected: str) -> None:
    assert with_host(url, host) == expected


def app(urls: tuple[str, ...], kind: ApplicationType = ApplicationType.SERVER) -> Application:
    return Application("urn:x", "x", kind, urls)


def test_opc_tcp_urls_are_preferred() -> None:
    assert preferred_url(app(("https://h/", "opc.tcp://h:1/"))) == "opc.tcp://h:1/"
    assert preferred_url(app(("https://h/",))) == "https://h/"
    assert preferred_url(app(("",))) is None


def test_answers_are_bounded() -> None:
    many = [(f"urn:{i}", "n", 0, ["opc.tcp://h:1/"]) for i in range(MAX_APPLICATIONS + 5)]
    answer = answer_of("opc.tcp://lds:4840/", many)
    assert len(answer.applications) == MAX_APPLICATIONS
    assert answer.problems == (
        f"opc.tcp://lds:4840/ answered {MAX_APPLICATIONS + 5} applications "
        f"(only the first {MAX_APPLICATIONS} read)",
    )
    urls = ["opc.tcp://h:1/"] * (MAX_APPLICATION_URLS + 1)
    refused = answer_of(
        "u", [("urn:a", "a", 0, urls), ("urn:b", "b", 7, []), ("urn:c", "c", 2, [])]
    )
    assert [a.uri for a in refused.applications] == ["urn:c"]
    assert len(refused.problems) == 2


def test_devices_keep_servers_only_deduplicated_with_a_stable_id() -> None:
    kinds = list(ApplicationType)
    servers = [Server(f"opc.tcp://h:{int(k) + 1}/", app((), k)) for k in kinds]
    servers.append(servers[0])
    found = devices(servers, details_of(""))
    assert [d.id for d in found] == ["opc.tcp://h:1/-urn:x", "opc.tcp://h:3/-urn:x"]
    assert found[0].properties == {
        "OPCUA_DISCOVERY_URL": "opc.tcp://h:1/",
        "OPCUA_APPLICATION_NAME": "x",
        "OPCUA_APPLICATION_URI": "urn:x",
    }


def addresses(*texts: str) -> frozenset[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    return frozenset(ipaddress.ip_address(text) for text in texts)


@pytest.mark.parametrize(
    ("named", "answerer", "refused"),
    [
        # a LAN host may name any LAN host, and itself whatever its address
        (["10.0.0.9"], ["10.0.0.5"], False),
        (["169.254.3.4"], ["169.254.3.4"], False),
        (["fe80::1", "10.0.0.5"], ["10.0.0.5", "fe80::1"], False),
        # the node itself (a loopback answer) may name its own and its link's addresses
        (["127.0.0.2"], ["127.0.0.1"], False),
        (["169.254.169.254"], ["127.0.0.1", "::1"], False),
        # another host may not name the node's or its link's services, nor no single host
        (["127.0.0.1"], ["10.0.0.5"], True),
        (["::1"], ["fd00::5"], True),
        (["169.254.169.254"], ["10.0.0.5"], True),
        (["169.254.169.254"], ["169.254.3.4"], True),
        (["fe80::1"], ["10.0.0.5"], True),
        (["224.0.0.1"], ["10.0.0.5"], True),
        (["10.0.0.9", "127.0.0.1"], ["10.0.0.5"], True),  # a name resolving to both
        (["127.0.0.1"], ["127.0.0.1", "10.0.0.5"], False),  # named itself
        (["127.0.0.2"], ["127.0.0.1", "10.0.0.5"], True),  # not only the node answered
        (["127.0.0.1"], [], True),  # an answerer whose name no longer resolves
    ],
)
def test_an_answer_may_name_local_addresses_only_from_the_node_or_of_itself(
    named: list[str], answerer: list[str], refused: bool
) -> None:
    url = "opc.tcp://plc:4840/"
    reason = follow_refused(url, addresses(*named), addresses(*answerer), details_of(""))
    assert (reason is not None) == refused
    if refused:
        assert reason is not None
        assert "a loopback or link-local address" in reason
        assert "allowLocalAddresses" in reason
    allowed = details_of("allowLocalAddresses: true")
    assert follow_refused(url, addresses(*named), addresses(*answerer), allowed) is None
