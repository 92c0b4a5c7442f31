"""Pure status decisions: instanceCount and InvalidBrokerSpec, written only on change."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from akri.controller.conditions import BrokerOutcome, updated_status

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = datetime(2026, 1, 2, tzinfo=UTC)
AGENT_CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Discovering",
    "message": "",
    "lastTransitionTime": "2025-12-31T00:00:00Z",
}


def update(
    stored: Mapping[str, Any] | None,
    *,
    instance_count: int,
    outcome: BrokerOutcome | None,
    now: datetime,
    live: Callable[[str], bool] = lambda _: True,
) -> dict[str, Any] | None:
    return updated_status(
        stored, instance_count=instance_count, outcome=outcome, live=live, generation=1, now=now
    )


def test_count_is_written_and_agent_conditions_kept() -> None:
    stored = {"conditions": [AGENT_CONDITION], "observedGeneration": 4}
    status = update(stored, instance_count=3, outcome=None, now=T0)
    assert status == {**stored, "instanceCount": 3, "conditions": [AGENT_CONDITION]}
    assert update(status, instance_count=3, outcome=None, now=T1) is None


def test_problem_sets_the_condition_and_success_clears_it() -> None:
    bad = BrokerOutcome(2, "Pod x was refused: invalid")
    status = update({"instanceCount": 1}, instance_count=1, outcome=bad, now=T0)
    assert status is not None
    (condition,) = status["conditions"]
    assert condition["type"] == "InvalidBrokerSpec"
    assert (condition["status"], condition["reason"]) == ("True", "Rejected")
    assert condition["message"] == "Pod x was refused: invalid"
    assert condition["observedGeneration"] == 2
    assert update(status, instance_count=1, outcome=bad, now=T1) is None

    fixed = update(status, instance_count=1, outcome=BrokerOutcome(3, None), now=T1)
    assert fixed is not None
    (cleared,) = fixed["conditions"]
    assert (cleared["status"], cleared["reason"]) == ("False", "Accepted")
    assert cleared["lastTransitionTime"].startswith("2026-01-02")


def test_success_without_a_condition_writes_none() -> None:
    ok = BrokerOutcome(1, None)
    assert update({"instanceCount": 0}, instance_count=0, outcome=ok, now=T0) is None
    assert update(None, instance_count=0, outcome=ok, now=T0) is None  # 0 is the default
    assert update(None, instance_count=1, outcome=ok, now=T0) == {
        "instanceCount": 1,
        "conditions": [],
    }


def _row(node: str, *problems: tuple[str, str]) -> dict[str, Any]:
    return {"node": node, "problems": [{"type": t, "message": m} for t, m in problems]}


def test_the_rows_of_gone_nodes_are_withdrawn_and_ready_computed_again() -> None:
    """A stray agent's HandlerUnavailable no longer holds Ready False once its node is gone."""
    stray = "node-9"
    stored = {
        "instanceCount": 2,
        "conditions": [
            {**AGENT_CONDITION, "status": "False", "reason": "HandlerUnavailable"},
            {
                "type": "HandlerUnavailable",
                "status": "True",
                "reason": "HandlerUnavailable",
                "message": "node node-9: no handler",
                "lastTransitionTime": "2025-12-31T00:00:00Z",
            },
        ],
        "nodes": [_row("node-0"), _row(stray, ("HandlerUnavailable", "no handler"))],
    }
    status = update(stored, instance_count=2, outcome=None, now=T0, live=lambda n: n != stray)
    assert status is not None
    assert status["nodes"] == [_row("node-0")]
    conditions = {c["type"]: (c["status"], c["reason"], c["message"]) for c in status["conditions"]}
    assert conditions == {
        "Ready": ("True", "Discovering", "discovering on 1 node(s): node-0"),
        "HandlerUnavailable": ("False", "Resolved", "no node reports it any more"),
    }
    assert update(status, instance_count=2, outcome=None, now=T1, live=lambda n: n != stray) is None


def test_without_any_row_left_ready_is_unknown() -> None:
    stored = {"instanceCount": 0, "conditions": [AGENT_CONDITION], "nodes": [_row("node-1")]}
    status = update(stored, instance_count=0, outcome=None, now=T0, live=lambda _: False)
    assert status is not None
    assert status["nodes"] == []
    (ready,) = status["conditions"]
    assert (ready["status"], ready["reason"]) == ("Unknown", "NoNodes")


def test_a_refusal_sets_controller_write_refused_and_its_end_clears_it() -> None:
    def refused(stored: Mapping[str, Any] | None, message: str | None) -> dict[str, Any] | None:
        return updated_status(
            stored,
            instance_count=0,
            outcome=None,
            live=lambda _: True,
            generation=3,
            now=T0,
            refused=message,
        )

    assert refused({"instanceCount": 0}, None) is None  # never refused: no condition at all
    status = refused({"instanceCount": 0}, "API error 422: slice is invalid")
    assert status is not None
    (condition,) = status["conditions"]
    assert condition["type"] == "ControllerWriteRefused"
    assert (condition["status"], condition["reason"]) == ("True", "Refused")
    assert condition["message"] == "API error 422: slice is invalid"
    assert condition["observedGeneration"] == 3
    assert refused(status, "API error 422: slice is invalid") is None
    cleared = refused(status, None)
    assert cleared is not None
    (condition,) = cleared["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "Accepted")
    assert refused(cleared, None) is None
