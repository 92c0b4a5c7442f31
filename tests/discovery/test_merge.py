"""Pure merging and de-duplication of endpoint lists, and the summary status."""

from __future__ import annotations

from akri.agent.discovery.merge import merge, summarise
from akri.api import ConditionType
from akri.discovery.model import Device, Status

A1 = Device("a", {"from": "1"})
A2 = Device("a", {"from": "2"})
B = Device("b")
C = Device("c")
READY = Status(ConditionType.READY, "ok")
DOWN = Status(ConditionType.HANDLER_UNAVAILABLE, "down")
BAD = Status(ConditionType.INVALID_DETAILS, "bad")


def test_merge_nothing() -> None:
    assert merge([]) == []
    assert merge([[], []]) == []


def test_same_id_from_two_endpoints_is_one_device_from_the_first() -> None:
    assert merge([[C, A1], [A2, B]]) == [A1, B, C]
    assert merge([[A2, B], [C, A1]]) == [A2, B, C]


def test_duplicates_within_one_list_collapse() -> None:
    assert merge([[B, A1, A2, B]]) == [A1, B]


def test_no_endpoints_means_handler_unavailable_naming_it() -> None:
    status = summarise("debugEcho", {})
    assert status is not None
    assert status.condition is ConditionType.HANDLER_UNAVAILABLE
    assert "'debugEcho'" in status.message


def test_invalid_details_win_then_any_working_endpoint() -> None:
    assert summarise("h", {"x": READY, "y": BAD, "z": DOWN}) == BAD
    assert summarise("h", {"x": DOWN, "y": READY, "z": None}) == READY
    assert summarise("h", {"x": None, "y": DOWN}) == DOWN


def test_nothing_to_say_while_every_endpoint_connects() -> None:
    assert summarise("h", {"x": None, "y": None}) is None


def test_first_failure_by_endpoint_order() -> None:
    other = Status(ConditionType.HANDLER_UNAVAILABLE, "other")
    assert summarise("h", {"b": other, "a": DOWN}) == DOWN
