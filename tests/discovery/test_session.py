"""DiscoverySession with embedded handlers: merging, change-only callbacks, retries, status."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping

from akri.agent.discovery.registry import EMBEDDED, HandlerRegistry
from akri.api import ConditionType
from akri.discovery.model import Device, HandlerUnavailable, InvalidDetails
from akri.discovery_handlers.debug_echo import DebugEcho
from tests.discovery.conftest import Recorder, SessionFactory, registered
from tests.discovery.scripted import Scripted
from tests.support import running

A, B, C = Device("a"), Device("b"), Device("c")


def condition(recorder: Recorder) -> ConditionType | None:
    return recorder.status.condition if recorder.status else None


async def test_waits_for_the_handler_then_discovers(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    async with running(make_session().run()):
        await recorder.until(lambda r: condition(r) is ConditionType.HANDLER_UNAVAILABLE)
        assert recorder.status is not None
        assert "no discovery handler named 'debugEcho'" in recorder.status.message
        assert recorder.lists == []
        registry.add(DebugEcho(availability_file=None))
        await recorder.until_ids("foo0", "foo1")
        await recorder.until(lambda r: condition(r) is ConditionType.READY)
    assert recorder.lists[-1][0].properties == {"DEBUG_ECHO_DESCRIPTION": "foo0"}


async def test_calls_back_only_on_change(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    handler = Scripted()
    registry.add(handler)
    async with running(make_session("scripted").run()):
        for devices in ([A], [A], [], [], [A, B]):
            handler.feed.put_nowait(devices)
        await recorder.until_ids("a", "b")
    assert recorder.lists == [[A], [], [A, B]]
    assert [s.condition for s in recorder.statuses] == [ConditionType.READY]


async def test_endpoints_are_merged_and_deduplicated(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    left, right = Scripted(), Scripted()
    registry.add(left, "/left.sock")
    registry.add(right, "http://10.0.0.1:10000")
    async with running(make_session("scripted").run()):
        left.feed.put_nowait([A, B])
        right.feed.put_nowait([C, Device("b", {"other": "copy"})])
        await recorder.until_ids("a", "b", "c")
        right.feed.put_nowait([C])  # b still seen through left: no change
        left.feed.put_nowait([A])
        await recorder.until_ids("a", "c")
    assert [[d.id for d in devices] for devices in recorder.lists][-2:] == [
        ["a", "b", "c"],
        ["a", "c"],
    ]
    assert all(len(devices) == len({d.id for d in devices}) for devices in recorder.lists)


async def test_a_failing_handler_loses_its_devices_and_is_retried(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    handler = Scripted()
    registry.add(handler)
    async with running(make_session("scripted", drop_after=0.0).run()):
        handler.feed.put_nowait([A])
        await recorder.until_ids("a")
        handler.feed.put_nowait(HandlerUnavailable("link down"))
        await recorder.until_ids()
        assert recorder.status is not None
        assert recorder.status.condition is ConditionType.HANDLER_UNAVAILABLE
        assert recorder.status.message == "link down"
        handler.feed.put_nowait(RuntimeError("a bug"))
        await recorder.until(
            lambda r: "RuntimeError('a bug')" in (r.status.message if r.status else "")
        )
        handler.feed.put_nowait([B])
        await recorder.until_ids("b")
        await recorder.until(lambda r: condition(r) is ConditionType.READY)
    assert handler.started == 3
    assert registry.handlers("scripted") == {EMBEDDED: handler}  # embedded ones are never dropped


async def test_an_ending_stream_counts_as_a_failure(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    class Once(Scripted):
        async def discover(
            self, details: str, properties: Mapping[str, bytes]
        ) -> AsyncGenerator[list[Device], None]:
            self.started += 1
            yield [A]

    handler = Once()
    registry.add(handler)
    async with running(make_session("scripted").run()):
        await recorder.until(lambda r: handler.started >= 2 and "ended" in str(r.status))
    assert recorder.lists[0] == [A]


async def test_an_external_endpoint_failing_past_drop_after_is_unregistered(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    handler = Scripted()
    registry.add(handler, "/gone.sock")
    async with running(make_session("scripted", drop_after=0.0).run()):
        handler.feed.put_nowait(HandlerUnavailable("connection refused"))
        await registered(registry, "scripted", count=0)
        await recorder.until(lambda r: "no discovery handler named" in str(r.status))


async def test_invalid_details_are_not_retried_until_the_handler_re_registers(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    refusing, fixed = Scripted(), Scripted()
    registry.add(refusing, "/h.sock")
    async with running(make_session("scripted").run()):
        refusing.feed.put_nowait(InvalidDetails("descriptions: Field required"))
        await recorder.until(lambda r: condition(r) is ConditionType.INVALID_DETAILS)
        assert recorder.status is not None
        assert recorder.status.message == "descriptions: Field required"
        registry.add(fixed, "/h.sock")
        fixed.feed.put_nowait([A])
        await recorder.until_ids("a")
        await recorder.until(lambda r: condition(r) is ConditionType.READY)
    assert refusing.started == 1
    assert registry.handlers("scripted") == {"/h.sock": fixed}


async def test_a_re_registration_restarts_the_endpoint_at_once(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    old, new = Scripted(), Scripted()
    registry.add(old, "/h.sock")
    async with running(make_session("scripted").run()):
        old.feed.put_nowait([A])
        await recorder.until_ids("a")
        registry.add(new, "/h.sock")
        new.feed.put_nowait([B])
        await recorder.until_ids("b")
        assert old.closed == 1
    assert new.closed == 1  # cancelling the session closes its streams


async def test_stops_following_removed_endpoints(
    registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    left, right = Scripted(), Scripted()
    registry.add(left, "/l.sock")
    registry.add(right, "/r.sock")
    async with running(make_session("scripted").run()):
        left.feed.put_nowait([A])
        right.feed.put_nowait([B])
        await recorder.until_ids("a", "b")
        registry.remove("scripted", "/r.sock", right)
        await recorder.until_ids("a")
        assert right.closed == 1
