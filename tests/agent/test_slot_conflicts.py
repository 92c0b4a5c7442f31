"""The SlotConflict condition on an Instance: reported once, cleared by whoever reported it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from akri.agent.plugins.conflicts import conflict_conditions
from akri.api import Condition
from akri.node_reports import RESOLVED_REASON as RESOLVED
from akri.slot_sync import Conflict, SlotRef, User
from akri.slots import Holding, NodeHolder

T0 = datetime(2025, 1, 1, tzinfo=UTC)
CONFLICT = Conflict(
    Holding("akri.sh/cfg-a", "cfg-a-0"),
    SlotRef("cfg-a", 0),
    NodeHolder("z"),
    (User("d", "p", "c"),),
)


def report(conditions: list[Condition], node: str, *conflicts: Conflict) -> list[Condition] | None:
    return conflict_conditions(conditions, node, list(conflicts), 3, T0 + timedelta(seconds=5))


def test_a_conflict_is_reported_with_the_node_and_what_it_saw() -> None:
    other = Condition(type="Other", status="True", reason="X", last_transition_time=T0)
    (kept, new) = report([other], "n", CONFLICT) or []
    assert kept == other
    assert new.type == "SlotConflict"
    assert new.status == "True"
    assert new.message == f"node n: {CONFLICT}"
    assert new.observed_generation == 3


def test_nothing_is_written_when_nothing_changes() -> None:
    assert report([], "n") is None
    reported = report([], "n", CONFLICT) or []
    assert report(reported, "n", CONFLICT) is None


def test_another_nodes_report_stands_until_it_clears_it() -> None:
    by_m = report([], "m", CONFLICT) or []
    assert report(by_m, "n", CONFLICT) is None
    assert report(by_m, "n") is None  # n never clears m's report
    cleared = report(by_m, "m") or []
    assert [(c.status, c.reason) for c in cleared] == [("False", RESOLVED)]
    assert report(cleared, "n", CONFLICT) is not None  # now n's report gets in


@pytest.mark.parametrize("prefix", ["node n: ", "node nn: "])
def test_a_report_is_mine_only_with_my_exact_node_name(prefix: str) -> None:
    mine = Condition(
        type="SlotConflict",
        status="True",
        reason="R",
        message=prefix + "x",
        last_transition_time=T0,
    )
    cleared = report([mine], "n")
    assert (cleared is not None) == (prefix == "node n: ")


def test_the_transition_time_moves_only_with_the_status() -> None:
    first = report([], "n", CONFLICT) or []
    other = Conflict(CONFLICT.holding, CONFLICT.slot, NodeHolder("y"), CONFLICT.users)
    changed = conflict_conditions(first, "n", [other], 3, T0 + timedelta(hours=1)) or []
    assert changed[0].last_transition_time == first[0].last_transition_time
    assert "node y" in changed[0].message
