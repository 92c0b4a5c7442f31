"""Pure node-loss decisions with an injected clock."""

from __future__ import annotations

from typing import Any

import pytest

from akri.controller.nodes import NodeWatch, is_ready


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def node(status: str | None) -> dict[str, Any]:
    conditions = [] if status is None else [{"type": "Ready", "status": status}]
    return {"metadata": {"name": "n"}, "status": {"conditions": conditions}}


@pytest.mark.parametrize(
    ("status", "ready"), [("True", True), ("False", False), ("Unknown", False), (None, False)]
)
def test_ready_only_when_the_condition_is_true(status: str | None, ready: bool) -> None:
    assert is_ready(node(status)) is ready


def test_not_ready_node_is_lost_after_the_grace_period() -> None:
    clock = Clock()
    watch = NodeWatch(60.0, clock)
    watch.observe("n", node("True"))
    assert watch.lost_in("n") is None
    watch.observe("n", node("Unknown"))
    assert watch.lost_in("n") == 60.0
    clock.now = 40.0
    watch.observe("n", node("False"))  # still not Ready: the timer keeps running
    assert watch.lost_in("n") == 20.0
    assert watch.lost_in("n") != 0.0
    clock.now = 60.0
    assert watch.lost_in("n") == 0.0


def test_ready_again_resets_the_timer() -> None:
    clock = Clock()
    watch = NodeWatch(60.0, clock)
    watch.observe("n", node("Unknown"))
    clock.now = 50.0
    watch.observe("n", node("True"))
    assert watch.lost_in("n") is None
    watch.observe("n", node("Unknown"))
    clock.now = 100.0
    assert watch.lost_in("n") == 10.0


def test_deleted_node_is_lost_at_once_and_a_new_one_starts_over() -> None:
    clock = Clock()
    watch = NodeWatch(60.0, clock)
    watch.observe("n", None)
    assert watch.lost_in("n") == 0.0
    clock.now = 5.0
    watch.observe("n", node("Unknown"))  # registered again, not Ready yet
    assert watch.lost_in("n") == 60.0
    assert watch.lost_in("never-seen") is None
