"""The embedded debugEcho handler: devices offline and back, in-process and through the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from akri.agent.discovery.registry import HandlerRegistry
from akri.discovery.model import Device, InvalidDetails
from akri.discovery_handlers.debug_echo import DebugEcho, from_environment
from tests.discovery.conftest import DETAILS, Recorder, SessionFactory
from tests.support import running


def ids_of(devices: list[Device]) -> list[str]:
    return [d.id for d in devices]


async def test_set_offline_and_back(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    echo = DebugEcho(availability_file=None)
    registry.add(echo)
    async with running(make_session().run()):
        await recorder.until_ids("foo0", "foo1")
        echo.set_offline(["foo0"])
        await recorder.until_ids("foo1")
        echo.set_offline(everything=True)
        await recorder.until_ids()
        echo.set_offline()
        await recorder.until_ids("foo0", "foo1")


async def test_availability_file(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory, socket_dir: Path
) -> None:
    availability = socket_dir / "availability.txt"
    registry.add(DebugEcho(availability_file=availability, poll_interval=0.01))
    async with running(make_session().run()):
        await recorder.until_ids("foo0", "foo1")
        availability.write_text("OFFLINE\n")
        await recorder.until_ids()
        availability.write_text("foo1\n")
        await recorder.until_ids("foo0")
        availability.unlink()
        await recorder.until_ids("foo0", "foo1")


async def test_unchanged_lists_are_not_sent_again() -> None:
    echo = DebugEcho(availability_file=None)
    lists = echo.discover(DETAILS, {})
    assert ids_of(await anext(lists)) == ["foo0", "foo1"]
    echo.set_offline(["unrelated"])
    echo.set_offline(["foo0"])
    assert ids_of(await anext(lists)) == ["foo1"]
    await lists.aclose()


async def test_bad_details_fail_before_the_first_list() -> None:
    lists = DebugEcho(availability_file=None).discover("descriptions: 7", {})
    with pytest.raises(InvalidDetails, match="descriptions: Input should be a valid list"):
        await anext(lists)


def test_shared_from_the_option_then_the_environment() -> None:
    assert from_environment(None, {}).shared is True
    assert from_environment(None, {"DEBUG_ECHO_INSTANCES_SHARED": "false"}).shared is False
    assert from_environment(True, {"DEBUG_ECHO_INSTANCES_SHARED": "false"}).shared is True
    assert from_environment(False, {}).name == "debugEcho"
