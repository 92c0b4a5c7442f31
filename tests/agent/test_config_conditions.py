"""This node's row in a Configuration's status, and the conditions computed from all rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from akri.agent.conditions import (
    DISCOVERY_PROBLEMS,
    discovery_problems,
    explained,
    updated_status,
)
from akri.api import Condition, ConditionType, ConfigurationStatus
from akri.discovery.model import Status

T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
READY = Status(ConditionType.READY, "discovering with handler 'debugEcho'")
NO_HANDLER = Status(ConditionType.HANDLER_UNAVAILABLE, "no handler")
BAD_DETAILS = Status(ConditionType.INVALID_DETAILS, "descriptions: required")
PLUGIN = ConditionType.PLUGIN_UNAVAILABLE


def report(
    status: ConfigurationStatus | None,
    node: str,
    view: Status,
    generation: int = 1,
    now: datetime = T0,
) -> ConfigurationStatus:
    result = updated_status(
        status or ConfigurationStatus(),
        node,
        DISCOVERY_PROBLEMS,
        discovery_problems(view),
        generation,
        now,
    )
    assert result is not None
    return result


def by_type(status: ConfigurationStatus) -> dict[str, tuple[str, str, str]]:
    return {c.type: (c.status, c.reason, c.message) for c in status.conditions}


def test_a_healthy_configuration_shows_ready_only() -> None:
    status = report(None, "node-a", READY, generation=3)
    assert by_type(status) == {"Ready": ("True", "Discovering", "discovering on 1 node(s): node-a")}
    assert status.conditions[0].observed_generation == 3
    assert [(r.node, r.problems) for r in status.nodes] == [("node-a", [])]


def test_a_problem_sets_its_condition_and_ready_false() -> None:
    status = report(None, "node-b", NO_HANDLER)
    assert by_type(status) == {
        "Ready": ("False", "HandlerUnavailable", "node node-b: no handler"),
        "HandlerUnavailable": ("True", "HandlerUnavailable", "node node-b: no handler"),
    }


def test_ready_only_when_every_node_discovers_and_the_message_says_which_do_not() -> None:
    status = report(report(report(None, "node-a", READY), "node-b", NO_HANDLER), "node-c", READY)
    assert by_type(status)["Ready"] == ("False", "HandlerUnavailable", "node node-b: no handler")
    fixed = report(status, "node-b", READY, now=T1)
    assert by_type(fixed) == {
        "Ready": ("True", "Discovering", "discovering on 3 node(s): node-a, node-b, node-c"),
        "HandlerUnavailable": ("False", "Resolved", "no node reports it any more"),
    }
    assert {c.type: c.last_transition_time for c in fixed.conditions} == {
        "Ready": T1,
        "HandlerUnavailable": T1,
    }


def test_two_nodes_with_the_same_problem_are_both_named() -> None:
    status = report(report(None, "node-a", NO_HANDLER), "node-b", NO_HANDLER)
    assert by_type(status)["HandlerUnavailable"][2] == (
        "node node-a: no handler; node node-b: no handler"
    )
    one_fixed = report(status, "node-a", READY)
    assert by_type(one_fixed)["HandlerUnavailable"] == (
        "True",
        "HandlerUnavailable",
        "node node-b: no handler",
    )


def test_one_problem_replacing_another() -> None:
    first = report(None, "node-a", NO_HANDLER)
    second = report(first, "node-a", BAD_DETAILS, now=T1)
    assert by_type(second) == {
        "Ready": ("False", "InvalidDetails", "node node-a: descriptions: required"),
        "HandlerUnavailable": ("False", "Resolved", "no node reports it any more"),
        "InvalidDetails": ("True", "InvalidDetails", "node node-a: descriptions: required"),
    }
    ready = next(c for c in second.conditions if c.type == "Ready")
    assert ready.last_transition_time == T0  # still not ready: the problem's age shows


def test_a_node_reports_only_its_own_types() -> None:
    """The plugins' problems stay when discovery reports, and the other way round."""
    plugin = updated_status(
        report(None, "node-a", READY), "node-a", (PLUGIN,), {PLUGIN: "cannot bind"}, 1, T0
    )
    assert plugin is not None
    assert by_type(plugin)["Ready"] == ("False", "PluginUnavailable", "node node-a: cannot bind")
    both = report(plugin, "node-a", NO_HANDLER)
    assert [p.type for p in both.nodes[0].problems] == ["HandlerUnavailable", "PluginUnavailable"]
    assert by_type(both)["Ready"][1] == "HandlerUnavailable"  # discovery problems come first
    discovering = report(both, "node-a", READY)
    assert [p.type for p in discovering.nodes[0].problems] == ["PluginUnavailable"]


def test_nothing_to_write_when_the_view_is_already_stored() -> None:
    status = report(None, "node-a", BAD_DETAILS)
    problems = discovery_problems(BAD_DETAILS)
    assert updated_status(status, "node-a", DISCOVERY_PROBLEMS, problems, 1, T1) is None
    assert updated_status(status, "node-a", DISCOVERY_PROBLEMS, problems, 2, T1) is not None


def test_another_kind_of_condition_is_kept() -> None:
    other = Condition(type="Synced", status="True", reason="Ok", last_transition_time=T0)
    status = report(ConfigurationStatus(conditions=[other]), "node-a", READY, now=T1)
    assert status.conditions[0] == other


def test_the_message_names_the_handlers_the_node_has() -> None:
    missing = Status(ConditionType.HANDLER_UNAVAILABLE, "no discovery handler named 'udev'")
    view = explained(missing, "udev", {"onvif", "debugEcho"})
    assert view.message == "no discovery handler named 'udev'; registered here: debugEcho, onvif"
    assert explained(missing, "udev", set()).message.endswith("registered here: none")
    failing = Status(ConditionType.HANDLER_UNAVAILABLE, "udev at /x.sock: UNAVAILABLE")
    assert explained(failing, "udev", {"udev"}) == failing  # registered, just failing
    assert explained(READY, "debugEcho", set()) == READY
