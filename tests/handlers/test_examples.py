"""The example Configurations in crds/examples discover what their comments promise."""

from __future__ import annotations

import asyncio
import socket
from contextlib import aclosing
from pathlib import Path

import yaml
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from akri.discovery_handlers.mdns.handler import Mdns
from akri.discovery_handlers.opcua.servers import details_of as opcua_details
from akri.discovery_handlers.udev.devices import details_of as udev_details
from tests.handlers.streams import next_list

EXAMPLES = Path(__file__).parents[2] / "crds" / "examples"


def details(example: str) -> str:
    spec = yaml.safe_load((EXAMPLES / example).read_text())["spec"]
    return str(spec["discoveryHandler"]["discoveryDetails"])


async def test_mdns_example_finds_printers_only() -> None:
    announcer = AsyncZeroconf(interfaces=["127.0.0.1"])
    broadcasts = []
    try:
        async with aclosing(
            Mdns(interfaces=["127.0.0.1"]).discover(details("mdns.yaml"), {})
        ) as lists:
            assert await next_list(lists) == []
            for name in ("scanner-1", "printer-1"):
                info = AsyncServiceInfo(
                    "_http._tcp.local.",
                    f"{name}._http._tcp.local.",
                    addresses=[socket.inet_aton("127.0.0.1")],
                    port=80,
                    server=f"{name}.local.",
                )
                broadcasts.append(
                    await announcer.async_register_service(info, cooperating_responders=True)
                )
            assert [d.id for d in await next_list(lists)] == ["printer-1._http._tcp.local."]
    finally:
        await asyncio.gather(*broadcasts)
        await announcer.async_close()


def test_udev_example_details_parse() -> None:
    """Live under umockdev in test_udev_system; this check runs everywhere."""
    assert [r.text for r in udev_details(details("udev.yaml")).rules] == [
        'SUBSYSTEM=="video4linux", KERNEL=="video[0-9]*"'
    ]


def test_opcua_example_details_parse() -> None:
    """Live against asyncua servers in tests/sim/test_opcua_in_sim; this check runs alone."""
    parsed = opcua_details(details("opcua.yaml"))
    assert parsed.discovery_urls == ["opc.tcp://localhost:4840/", "opc.tcp://10.0.0.20:4840/"]
    assert parsed.application_names is not None
    assert parsed.application_names.action == "Exclude"
