"""Pure planning: which brokers to create and which to delete, and why."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from akri import naming
from akri.controller.builders import SPEC_HASH_ANNOTATION
from akri.controller.plan import Reason, plan_brokers

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
GRACE = 300.0


def desired(name: str, digest: str = "h1") -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {SPEC_HASH_ANNOTATION: digest}}}


def actual(
    name: str,
    *,
    digest: str = "h1",
    phase: str | None = "Running",
    age_s: float = 10.0,
    node: str | None = None,
    deleting: bool = False,
    **status: str,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "uid": f"uid-{name}",
        "annotations": {SPEC_HASH_ANNOTATION: digest},
        "creationTimestamp": (NOW - timedelta(seconds=age_s)).isoformat(),
        "labels": {naming.LABEL_TARGET_NODE: node} if node else {},
    }
    if deleting:
        metadata["deletionTimestamp"] = NOW.isoformat()
    return {"metadata": metadata, "status": {"phase": phase, **status} if phase else {}}


def names(objects: list[Any]) -> list[str]:
    return sorted(o["metadata"]["name"] for o in objects)


def test_missing_brokers_are_created_and_current_ones_kept() -> None:
    plan = plan_brokers({"a": desired("a"), "b": desired("b")}, [actual("a")], NOW, GRACE)
    assert names(plan.create) == ["b"]
    assert plan.delete == []
    assert plan.running == ["a"]
    assert plan.recheck_after is None


def test_unwanted_brokers_are_deleted_with_the_reason() -> None:
    plan = plan_brokers({"a": desired("a")}, [actual("a"), actual("b", node="n2")], NOW, GRACE)
    (deletion,) = plan.delete
    assert (deletion.name, deletion.reason, deletion.failed) == ("b", Reason.NOT_WANTED, False)
    assert "node n2 is no longer" in deletion.detail
    gone = plan_brokers({}, [actual("a")], NOW, GRACE, ["n1"]).delete[0]
    assert "deploys no such broker" in gone.detail
    job = plan_brokers({"j2": desired("j2")}, [actual("j1", phase=None)], NOW, GRACE)
    assert "superseded" in job.delete[0].detail
    assert names(job.create) == ["j2"]


def test_outdated_brokers_are_deleted_and_not_recreated_in_the_same_pass() -> None:
    plan = plan_brokers({"a": desired("a", "h2")}, [actual("a", digest="h1")], NOW, GRACE)
    assert [(d.name, d.reason, d.failed) for d in plan.delete] == [("a", Reason.OUTDATED, False)]
    assert plan.create == []


def test_ended_brokers_count_as_failures() -> None:
    for phase in ("Failed", "Succeeded"):
        plan = plan_brokers(
            {"a": desired("a")},
            [actual("a", phase=phase, reason="UnexpectedAdmissionError", message="boom")],
            NOW,
            GRACE,
        )
        (deletion,) = plan.delete
        assert (deletion.reason, deletion.failed) == (Reason.ENDED, True)
        assert "UnexpectedAdmissionError" in deletion.detail
        assert "boom" in deletion.detail
        assert plan.create == []


def test_pending_brokers_get_a_grace_period() -> None:
    young = plan_brokers({"a": desired("a")}, [actual("a", phase="Pending", age_s=100)], NOW, GRACE)
    assert young.delete == []
    assert young.recheck_after == GRACE - 100
    old = plan_brokers({"a": desired("a")}, [actual("a", phase="Pending", age_s=301)], NOW, GRACE)
    (deletion,) = old.delete
    assert (deletion.reason, deletion.failed) == (Reason.PENDING_TOO_LONG, True)


def test_brokers_being_deleted_block_their_name() -> None:
    plan = plan_brokers({"a": desired("a")}, [actual("a", deleting=True)], NOW, GRACE)
    assert plan.create == []
    assert plan.delete == []


def test_pending_broker_without_creation_time_is_left_alone() -> None:
    broker = actual("a", phase="Pending")
    del broker["metadata"]["creationTimestamp"]
    plan = plan_brokers({"a": desired("a")}, [broker], NOW, GRACE)
    assert (plan.delete, plan.create, plan.recheck_after) == ([], [], None)


def test_a_device_offline_on_its_last_node_is_told_as_on_any_other_node() -> None:
    """Issue 27: one offline device gave two reasons: the node's broker left while another node
    still saw it ("no longer in the Instance's nodes"), the last one as "the Configuration
    deploys no such broker"."""
    leaving = plan_brokers({"a": desired("a")}, [actual("b", node="n2")], NOW, GRACE, ["n1"])
    last = plan_brokers({}, [actual("a", node="n1")], NOW, GRACE, [])
    assert leaving.delete[0].detail == "node n2 is no longer in the Instance's nodes"
    assert last.delete[0].detail == "node n1 is no longer in the Instance's nodes"
