"""The conditions one agent asserts on a Configuration from its own view."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from akri.agent.conditions import explained, node_view, updated_conditions
from akri.agent.discovery.model import Status
from akri.api import Condition, ConditionType

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
READY = Status(ConditionType.READY, "node node-a: discovering with handler 'debugEcho'")
NO_HANDLER = Status(ConditionType.HANDLER_UNAVAILABLE, "node node-b: no handler")
BAD_DETAILS = Status(ConditionType.INVALID_DETAILS, "node node-a: descriptions: required")


def by_type(conditions: list[Condition] | None) -> dict[str, tuple[str, str, str]]:
    assert conditions is not None
    return {c.type: (c.status, c.reason, c.message) for c in conditions}


def test_a_healthy_configuration_shows_ready_only() -> None:
    conditions = updated_conditions([], READY, 3, T0)
    assert by_type(conditions) == {"Ready": ("True", "Discovering", READY.message)}
    assert conditions is not None
    assert conditions[0].observed_generation == 3


def test_a_problem_sets_its_condition_and_ready_false() -> None:
    conditions = updated_conditions([], NO_HANDLER, 1, T0)
    assert by_type(conditions) == {
        "Ready": ("False", "HandlerUnavailable", NO_HANDLER.message),
        "HandlerUnavailable": ("True", "HandlerUnavailable", NO_HANDLER.message),
    }


def test_a_resolved_problem_is_cleared_and_others_stay_absent() -> None:
    broken = updated_conditions([], BAD_DETAILS, 1, T0)
    assert broken is not None
    fixed = updated_conditions(broken, READY, 2, T1)
    assert by_type(fixed) == {
        "Ready": ("True", "Discovering", READY.message),
        "InvalidDetails": ("False", "Resolved", READY.message),
    }
    assert fixed is not None
    assert {c.type: c.last_transition_time for c in fixed} == {
        "Ready": T1,
        "InvalidDetails": T1,
    }


def test_one_problem_replacing_another() -> None:
    first = updated_conditions([], NO_HANDLER, 1, T0)
    assert first is not None
    second = updated_conditions(first, BAD_DETAILS, 1, T1)
    assert by_type(second) == {
        "Ready": ("False", "InvalidDetails", BAD_DETAILS.message),
        "HandlerUnavailable": ("False", "Resolved", BAD_DETAILS.message),
        "InvalidDetails": ("True", "InvalidDetails", BAD_DETAILS.message),
    }
    assert second is not None
    ready = next(c for c in second if c.type == "Ready")
    assert ready.last_transition_time == T0  # still not ready: the problem's age shows


def test_nothing_to_write_when_the_view_is_already_stored() -> None:
    conditions = updated_conditions([], BAD_DETAILS, 1, T0)
    assert conditions is not None
    assert updated_conditions(conditions, BAD_DETAILS, 1, T1) is None
    assert updated_conditions(conditions, BAD_DETAILS, 2, T1) is not None  # new generation


def test_another_kind_of_condition_is_kept() -> None:
    other = Condition(type="Synced", status="True", reason="Ok", last_transition_time=T0)
    conditions = updated_conditions([other], READY, 1, T1)
    assert conditions is not None
    assert conditions[0] == other


def test_the_message_names_the_node_and_the_handlers_it_has() -> None:
    missing = Status(ConditionType.HANDLER_UNAVAILABLE, "no discovery handler named 'udev'")
    view = node_view("node-b", explained(missing, "udev", {"onvif", "debugEcho"}))
    assert view.message == (
        "node node-b: no discovery handler named 'udev'; registered here: debugEcho, onvif"
    )
    assert explained(missing, "udev", set()).message.endswith("registered here: none")
    failing = Status(ConditionType.HANDLER_UNAVAILABLE, "udev at /x.sock: UNAVAILABLE")
    assert explained(failing, "udev", {"udev"}) == failing  # registered, just failing
    assert explained(READY, "debugEcho", set()) == READY
