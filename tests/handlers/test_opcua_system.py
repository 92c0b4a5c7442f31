"""The opcua handler against real asyncua servers on loopback: found directly and through a
discovery server, filtered by application name, followed as they go and come back, and hostile
answers bounded instead of crashing the handler."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

import pytest
from asyncua import ua

from akri.discovery.model import Device, HandlerUnavailable, InvalidDetails
from akri.discovery_handlers.opcua.handler import OpcUa
from akri.discovery_handlers.opcua.servers import MAX_APPLICATIONS, MAX_NAME_CHARS
from tests.handlers.opcua_peers import (
    answer_with,
    description,
    free_tcp_port,
    lan_address,
    opcua_server,
    url_of,
)
from tests.handlers.streams import next_list


def details(*urls: str, extra: str = "") -> str:
    listed = ", ".join(urls)
    return (
        f"opcuaDiscoveryMethod: {{standard: {{discoveryUrls: [{listed}]}}}}\n"
        f"discoveryIntervalSeconds: 1\n{extra}"
    )


def discover(text: str) -> AsyncGenerator[list[Device], None]:
    return OpcUa(check_timeout=1, request_timeout=3).discover(text, {})


def names(devices: list[Device]) -> list[str]:
    return sorted(d.properties["OPCUA_APPLICATION_NAME"] for d in devices)


async def until(lists: AsyncGenerator[list[Device], None], wanted: list[str]) -> list[Device]:
    """The first list whose servers are `wanted` (by name); each list comes within a deadline."""
    while names(found := await next_list(lists)) != wanted:
        pass
    return found


async def test_servers_found_directly_and_through_a_discovery_server() -> None:
    lds_port = free_tcp_port()
    dead = url_of(free_tcp_port())  # nothing listens there: the round goes on without it
    async with (
        opcua_server("lds", port=lds_port, discovery_server=True),
        opcua_server("direct") as direct,
        opcua_server("registered") as registered,
        opcua_server("both") as both,
    ):
        await registered.register_to_discovery(url_of(lds_port), period=0)
        await both.register_to_discovery(url_of(lds_port), period=0)
        urls = (dead, url_of(lds_port), direct.endpoint.geturl(), both.endpoint.geturl())
        async with aclosing(discover(details(*urls))) as lists:
            found = await until(lists, ["both", "direct", "registered"])
    by_name = {d.properties["OPCUA_APPLICATION_NAME"]: d for d in found}
    assert by_name["registered"].properties == {
        "OPCUA_DISCOVERY_URL": registered.endpoint.geturl(),
        "OPCUA_APPLICATION_NAME": "registered",
        "OPCUA_APPLICATION_URI": "urn:test:registered",
    }
    assert by_name["registered"].id == f"{registered.endpoint.geturl()}-urn:test:registered"
    assert "lds" not in by_name  # a discovery server is followed, not a device


async def test_a_server_that_goes_away_leaves_and_comes_back_with_its_id() -> None:
    port = free_tcp_port()
    async with opcua_server("steady") as steady:
        text = details(url_of(port), steady.endpoint.geturl())
        async with aclosing(discover(text)) as lists:
            async with opcua_server("flaky", port=port):
                before = await until(lists, ["flaky", "steady"])
            await until(lists, ["steady"])
            async with opcua_server("flaky", port=port):
                after = await until(lists, ["flaky", "steady"])
    assert [d.id for d in after] == [d.id for d in before]


@pytest.mark.parametrize(("action", "wanted"), [("Include", ["line-2"]), ("Exclude", ["line-1"])])
async def test_application_names_filter(action: str, wanted: list[str]) -> None:
    async with opcua_server("line-1") as one, opcua_server("line-2") as two:
        text = details(
            one.endpoint.geturl(),
            two.endpoint.geturl(),
            extra=f"applicationNames: {{action: {action}, items: [line-2]}}",
        )
        async with aclosing(discover(text)) as lists:
            assert names(await next_list(lists)) == wanted


async def test_unresolvable_or_unspecified_hosts_become_the_answering_address() -> None:
    port = free_tcp_port()
    async with opcua_server("gateway", port=port) as gateway:
        answer_with(
            gateway,
            [
                description("urn:a", "named", [f"opc.tcp://plc-7.invalid:{port}/a"]),
                description("urn:b", "anywhere", [f"opc.tcp://0.0.0.0:{port}/b"]),
                description(
                    "urn:c", "web first", ["https://h.invalid/c", f"opc.tcp://[::]:{port}/c"]
                ),
                description(
                    "urn:d", "a client", ["opc.tcp://127.0.0.1:1/"], ua.ApplicationType.Client
                ),
            ],
        )
        async with aclosing(discover(details(gateway.endpoint.geturl()))) as lists:
            found = await next_list(lists)
    assert sorted(d.properties["OPCUA_DISCOVERY_URL"] for d in found) == [
        f"opc.tcp://127.0.0.1:{port}/a",
        f"opc.tcp://127.0.0.1:{port}/b",
        f"opc.tcp://127.0.0.1:{port}/c",
    ]


async def test_a_lan_host_cannot_steer_the_handler_to_the_nodes_own_services() -> None:
    """A discovery server on the LAN names a discovery server on the node's loopback, a node
    service and the cloud metadata address: none is asked or reported, unless
    allowLocalAddresses. What it says of itself is kept."""
    lan = lan_address()
    if lan is None:
        pytest.skip("this machine has no IPv4 address besides loopback to play a LAN host")
    connections = 0

    async def record(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.close()

    listener = await asyncio.start_server(record, "127.0.0.2", 0)
    inner = f"opc.tcp://127.0.0.2:{listener.sockets[0].getsockname()[1]}/"
    async with listener, opcua_server("gateway", endpoint_host=lan) as gateway:
        answer_with(
            gateway,
            [
                description("urn:i", "inner", [inner], ua.ApplicationType.DiscoveryServer),
                description("urn:n", "node service", ["opc.tcp://127.0.0.1:10250/"]),
                description("urn:m", "metadata", ["opc.tcp://169.254.169.254:80/"]),
                description("urn:g", "gateway itself", [f"opc.tcp://{lan}:4841/"]),
            ],
        )
        async with aclosing(discover(details(gateway.endpoint.geturl()))) as lists:
            assert names(await next_list(lists)) == ["gateway itself"]
        assert connections == 0  # the list comes after the round's every hop
        allowed = details(gateway.endpoint.geturl(), extra="allowLocalAddresses: true")
        async with aclosing(discover(allowed)) as lists:
            found = await next_list(lists)
        assert names(found) == ["gateway itself", "metadata", "node service"]
        assert connections > 0  # the inner discovery server was asked


async def test_hostile_answers_are_bounded_and_cleaned() -> None:
    """Control characters are stripped, an over-long name refuses its application, a huge list
    is cut; the honest server next to it is still found."""
    port = free_tcp_port()
    async with opcua_server("honest") as honest, opcua_server("hostile", port=port) as hostile:
        flood = [
            description(f"urn:flood:{i}", f"flood {i}", [f"opc.tcp://127.0.0.1:{port}/{i}"])
            for i in range(MAX_APPLICATIONS * 4)
        ]
        answer_with(
            hostile,
            [
                description("urn:evil\n", "evil\x1b[2J\u202ename\r\n", [url_of(port)]),
                description("urn:long", "x" * (MAX_NAME_CHARS + 1), [url_of(port)]),
                *flood,
            ],
        )
        text = details(honest.endpoint.geturl(), hostile.endpoint.geturl())
        async with aclosing(discover(text)) as lists:
            found = await next_list(lists)
    by_uri = {d.properties["OPCUA_APPLICATION_URI"]: d for d in found}
    assert "urn:test:honest" in by_uri
    assert by_uri["urn:evil"].properties["OPCUA_APPLICATION_NAME"] == "evil[2Jname"
    assert "urn:long" not in by_uri
    assert len(found) == 1 + 1 + MAX_APPLICATIONS - 2  # honest, evil, the flood's first ones


async def test_a_hostile_server_alone_is_a_clear_condition() -> None:
    async with opcua_server("hostile") as hostile:
        answer_with(hostile, [description("urn:long", "y" * 100_000, [url_of(1)])])
        async with aclosing(discover(details(hostile.endpoint.geturl()))) as lists:
            with pytest.raises(HandlerUnavailable, match="application name of 100000 characters"):
                await next_list(lists)


async def test_only_dead_urls_is_an_empty_list_not_an_error() -> None:
    async with aclosing(discover(details(url_of(free_tcp_port())))) as lists:
        assert await next_list(lists) == []


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("discoveryIntervalSeconds: 0.5", "discoveryIntervalSeconds"),
        ("opcuaDiscoveryMethod: {standard: {discoveryUrls: [http://plc/]}}", "discoveryUrls"),
        ("opcuaDiscoveryMethod: {standard: {discoveryUrls: []}}", "discoveryUrls"),
        ("opcuaDiscoveryMethod: {lds: {}}", "lds"),
        ("applicationNames: {action: Maybe, items: []}", "applicationNames.action"),
        ("servers: yes", "servers"),
    ],
)
async def test_bad_details_are_refused_before_any_list(text: str, reason: str) -> None:
    async with aclosing(OpcUa().discover(text, {})) as lists:
        with pytest.raises(InvalidDetails, match=reason):
            await anext(lists)
