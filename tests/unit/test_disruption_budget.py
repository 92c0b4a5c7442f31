"""The disruption controller's arithmetic (pure): expected, healthy, desired and allowed pods."""

from __future__ import annotations

from typing import Any

import pytest

from akri.sim.workloads.disruption import budget_status

NOW = "2026-01-01T00:00:10Z"
EARLIER = "2026-01-01T00:00:00Z"


def budget(namespace: str = "default", selector: Any = None, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "b", "namespace": namespace, "generation": 3},
        "spec": {"selector": {"matchLabels": {"app": "web"}} if selector is None else selector}
        | spec,
    }


def pod(
    name: str,
    *,
    ready: bool = True,
    phase: str = "Running",
    labels: dict[str, str] | None = None,
    namespace: str = "default",
    terminating: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": {"app": "web"} if labels is None else labels,
    }
    if terminating:
        metadata["deletionTimestamp"] = EARLIER
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"metadata": metadata, "status": {"phase": phase, "conditions": [condition]}}


def counts(status: dict[str, Any]) -> tuple[int, int, int, int]:
    return (
        status["expectedPods"],
        status["currentHealthy"],
        status["desiredHealthy"],
        status["disruptionsAllowed"],
    )


HEALTHY_3 = [pod("a"), pod("b"), pod("c")]


@pytest.mark.parametrize(
    ("spec", "pods", "expected"),
    [
        ({"minAvailable": 1}, HEALTHY_3[:2], (2, 2, 1, 1)),
        ({"minAvailable": 1}, [pod("a"), pod("b", ready=False)], (2, 1, 1, 0)),
        ({"minAvailable": 3}, HEALTHY_3[:2], (2, 2, 3, 0)),
        ({"minAvailable": 0}, HEALTHY_3, (3, 3, 0, 3)),
        ({"minAvailable": 1}, [], (0, 0, 1, 0)),
        # percentages of minAvailable round up: 50% of 3 is 2
        ({"minAvailable": "50%"}, HEALTHY_3, (3, 3, 2, 1)),
        ({"minAvailable": "100%"}, HEALTHY_3, (3, 3, 3, 0)),
        ({"minAvailable": "0%"}, HEALTHY_3, (3, 3, 0, 3)),
        # maxUnavailable: desired = expected - maxUnavailable, rounded up (34% of 3 -> 2)
        ({"maxUnavailable": 1}, HEALTHY_3, (3, 3, 2, 1)),
        ({"maxUnavailable": "34%"}, HEALTHY_3, (3, 3, 1, 2)),
        ({"maxUnavailable": 5}, HEALTHY_3, (3, 3, 0, 3)),
        ({"maxUnavailable": 0}, HEALTHY_3, (3, 3, 3, 0)),
        ({"maxUnavailable": 1}, [pod("a"), pod("b", ready=False), pod("c")], (3, 2, 2, 0)),
        # nothing expected allows nothing, even with no minimum
        ({"maxUnavailable": 1}, [], (0, 0, 0, 0)),
        ({}, HEALTHY_3, (0, 3, 0, 0)),
    ],
)
def test_counts(
    spec: dict[str, Any], pods: list[dict[str, Any]], expected: tuple[int, ...]
) -> None:
    assert counts(budget_status(budget(**spec), pods, NOW)) == expected


def test_only_pods_the_selector_matches_in_the_namespace_count() -> None:
    pods = [pod("a"), pod("other", labels={"app": "db"}), pod("far", namespace="elsewhere")]
    assert counts(budget_status(budget(minAvailable=0), pods, NOW)) == (1, 1, 0, 1)


def test_match_expressions_select_too() -> None:
    selector = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}
    pods = [pod("a"), pod("b", labels={"app": "db"}), pod("c", labels={"app": "x"})]
    assert counts(budget_status(budget(selector=selector, minAvailable=1), pods, NOW)) == (
        2, 2, 1, 1,
    )  # fmt: skip


def test_an_empty_selector_selects_all_pods_of_the_namespace_and_a_missing_one_none() -> None:
    pods = [pod("a"), pod("b", labels={})]
    assert budget_status(budget(selector={}, minAvailable=1), pods, NOW)["disruptionsAllowed"] == 1
    missing = budget(minAvailable=0)
    del missing["spec"]["selector"]
    assert counts(budget_status(missing, pods, NOW)) == (0, 0, 0, 0)


def test_terminating_and_finished_pods_are_not_healthy() -> None:
    pods = [pod("a"), pod("b", terminating=True), pod("c", phase="Succeeded")]
    # an int minAvailable expects every matching pod, as upstream's len(pods)
    assert counts(budget_status(budget(minAvailable=1), pods, NOW)) == (3, 1, 1, 0)
    # a percentage or maxUnavailable expects only the live ones (the controllers' scale)
    assert counts(budget_status(budget(maxUnavailable=0), pods, NOW)) == (1, 1, 1, 0)


def test_condition_and_generation() -> None:
    status = budget_status(budget(minAvailable=1), HEALTHY_3, NOW)
    assert status["observedGeneration"] == 3
    assert status["conditions"] == [
        {
            "type": "DisruptionAllowed",
            "status": "True",
            "reason": "SufficientPods",
            "message": "",
            "observedGeneration": 3,
            "lastTransitionTime": NOW,
        }
    ]
    blocked = budget_status(budget(minAvailable=3), HEALTHY_3[:1], NOW)["conditions"][0]
    assert (blocked["status"], blocked["reason"]) == ("False", "InsufficientPods")


@pytest.mark.parametrize(("previous", "kept"), [("True", True), ("False", False)])
def test_transition_time_moves_only_when_the_status_changes(previous: str, kept: bool) -> None:
    old = budget(minAvailable=1)
    old["status"] = {
        "conditions": [
            {"type": "DisruptionAllowed", "status": previous, "lastTransitionTime": EARLIER}
        ]
    }
    condition = budget_status(old, HEALTHY_3, NOW)["conditions"][0]
    assert condition["lastTransitionTime"] == (EARLIER if kept else NOW)
