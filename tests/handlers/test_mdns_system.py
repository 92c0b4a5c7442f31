"""The mdns handler against real zeroconf services announced on 127.0.0.1."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable
from contextlib import aclosing
from pathlib import Path

import pytest
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from akri.agent.discovery.registry import HandlerRegistry
from akri.discovery.model import Device, InvalidDetails
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.mdns.handler import Mdns, from_environment
from tests.discovery.conftest import Recorder, SessionFactory, fast_backoff, registered
from tests.handlers.streams import next_list
from tests.support import running

LOOPBACK = ["127.0.0.1"]
HTTP = "_http._tcp.local."
DETAILS = f"serviceTypes: [{HTTP}]\nnames: {{action: Include, items: ['^printer-']}}"


def service(name: str, port: int = 8080, **txt: str) -> AsyncServiceInfo:
    return AsyncServiceInfo(
        HTTP,
        f"{name}.{HTTP}",
        addresses=[socket.inet_aton("127.0.0.1")],
        port=port,
        properties=txt,
        server=f"{name}.local.",
    )


class Announcer:
    """Registers and withdraws services like a device on the link would.

    zeroconf repeats each announcement in a background task; the test goes on meanwhile and
    `close` waits for those tasks, so nothing is left running.
    """

    def __init__(self, zeroconf: AsyncZeroconf) -> None:
        self._zeroconf = zeroconf
        self._broadcasts: list[Awaitable[object]] = []

    async def register(self, info: AsyncServiceInfo) -> None:
        self._broadcasts.append(
            await self._zeroconf.async_register_service(info, cooperating_responders=True)
        )

    async def update(self, info: AsyncServiceInfo) -> None:
        self._broadcasts.append(await self._zeroconf.async_update_service(info))

    async def withdraw(self, info: AsyncServiceInfo) -> None:
        self._broadcasts.append(await self._zeroconf.async_unregister_service(info))

    async def close(self) -> None:
        await asyncio.gather(*self._broadcasts)
        await self._zeroconf.async_close()


@pytest.fixture
async def announcer() -> AsyncIterator[Announcer]:
    announcer = Announcer(AsyncZeroconf(interfaces=LOOPBACK))
    yield announcer
    await announcer.close()


def names(devices: list[Device]) -> list[str]:
    return [d.id for d in devices]


async def test_services_come_and_go_as_events(announcer: Announcer) -> None:
    first, scanner = service("printer-1", rp="ipp/print"), service("scanner-1")
    async with aclosing(Mdns(interfaces=LOOPBACK).discover(DETAILS, {})) as lists:
        assert await next_list(lists) == []
        await announcer.register(scanner)
        await announcer.register(first)
        (device,) = await next_list(lists)
        assert device.id == f"printer-1.{HTTP}"
        assert device.properties == {
            "MDNS_NAME": f"printer-1.{HTTP}",
            "MDNS_INSTANCE": "printer-1",
            "MDNS_SERVICE_TYPE": HTTP,
            "MDNS_HOST": "printer-1.local.",
            "MDNS_ADDRESSES": "127.0.0.1",
            "MDNS_PORT": "8080",
            "MDNS_TXT_RP": "ipp/print",
        }
        second = service("printer-2", port=9090)
        await announcer.register(second)
        assert names(await next_list(lists)) == [f"printer-1.{HTTP}", f"printer-2.{HTTP}"]
        await announcer.withdraw(first)
        assert names(await next_list(lists)) == [f"printer-2.{HTTP}"]


async def test_txt_updates_change_properties_and_filters(announcer: Announcer) -> None:
    details = DETAILS + "\ntxtRecords: {state: {items: [ready]}}"
    async with aclosing(Mdns(interfaces=LOOPBACK).discover(details, {})) as lists:
        assert await next_list(lists) == []
        await announcer.register(service("printer-1", state="busy"))
        await announcer.register(service("printer-2", state="ready"))
        assert names(await next_list(lists)) == [f"printer-2.{HTTP}"]
        await announcer.update(service("printer-1", state="ready"))
        assert names(await next_list(lists)) == [f"printer-1.{HTTP}", f"printer-2.{HTTP}"]


async def test_bad_details_fail_before_anything_listens() -> None:
    lists = Mdns(interfaces=LOOPBACK).discover("serviceTypes: [http]", {})
    with pytest.raises(InvalidDetails, match="a service type looks like"):
        await anext(lists)


def test_interfaces_and_shared_from_the_environment() -> None:
    assert from_environment(None, {}).shared is True
    assert from_environment(False, {"MDNS_INTERFACES": "127.0.0.1, 10.0.0.1"}).shared is False


@pytest.fixture
async def served_mdns(socket_dir: Path) -> AsyncIterator[HandlerServer]:
    async with HandlerServer(Mdns(interfaces=LOOPBACK), socket_dir, backoff=fast_backoff) as s:
        yield s


@pytest.mark.usefixtures("agent", "served_mdns")
async def test_external_mdns_handler_reaches_the_session(
    announcer: Announcer,
    registry: HandlerRegistry,
    recorder: Recorder,
    make_session: SessionFactory,
) -> None:
    await registered(registry, "mdns")
    async with running(make_session("mdns", DETAILS).run()):
        await recorder.until_ids()
        printer = service("printer-7")
        await announcer.register(printer)
        await recorder.until_ids(f"printer-7.{HTTP}")
        await announcer.withdraw(printer)
        await recorder.until_ids()
