"""Pure status decisions: instanceCount and InvalidBrokerSpec, written only on change."""

from __future__ import annotations

from datetime import UTC, datetime

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


def test_count_is_written_and_agent_conditions_kept() -> None:
    stored = {"conditions": [AGENT_CONDITION], "observedGeneration": 4}
    status = updated_status(stored, instance_count=3, outcome=None, now=T0)
    assert status == {**stored, "instanceCount": 3, "conditions": [AGENT_CONDITION]}
    assert updated_status(status, instance_count=3, outcome=None, now=T1) is None


def test_problem_sets_the_condition_and_success_clears_it() -> None:
    bad = BrokerOutcome(2, "Pod x was refused: invalid")
    status = updated_status({"instanceCount": 1}, instance_count=1, outcome=bad, now=T0)
    assert status is not None
    (condition,) = status["conditions"]
    assert condition["type"] == "InvalidBrokerSpec"
    assert (condition["status"], condition["reason"]) == ("True", "Rejected")
    assert condition["message"] == "Pod x was refused: invalid"
    assert condition["observedGeneration"] == 2
    assert updated_status(status, instance_count=1, outcome=bad, now=T1) is None

    fixed = updated_status(status, instance_count=1, outcome=BrokerOutcome(3, None), now=T1)
    assert fixed is not None
    (cleared,) = fixed["conditions"]
    assert (cleared["status"], cleared["reason"]) == ("False", "Accepted")
    assert cleared["lastTransitionTime"].startswith("2026-01-02")


def test_success_without_a_condition_writes_none() -> None:
    ok = BrokerOutcome(1, None)
    assert updated_status({"instanceCount": 0}, instance_count=0, outcome=ok, now=T0) is None
    assert updated_status(None, instance_count=0, outcome=ok, now=T0) is None  # 0 is the default
    assert updated_status(None, instance_count=1, outcome=ok, now=T0) == {
        "instanceCount": 1,
        "conditions": [],
    }
