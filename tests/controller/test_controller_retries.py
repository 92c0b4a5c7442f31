"""Pure backoff bookkeeping: growing waits per broker, idempotent per failed Pod."""

from __future__ import annotations

import random

from akri.backoff import Backoff
from akri.controller.retries import Retries


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def retries(clock: Clock) -> Retries[str]:
    return Retries(lambda: Backoff(initial=1.0, maximum=8.0, jitter=0.0), clock, random.Random(0))


def test_each_failure_doubles_the_wait_up_to_the_cap() -> None:
    clock = Clock()
    tracker = retries(clock)
    assert tracker.wait("a") == 0.0
    delays = [tracker.failed("a", f"uid-{i}") for i in range(6)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
    assert tracker.wait("a") == 8.0
    clock.now += 3
    assert tracker.wait("a") == 5.0
    clock.now += 5
    assert tracker.wait("a") == 0.0
    assert tracker.wait("b") == 0.0  # keys are independent


def test_the_same_failed_pod_counts_once() -> None:
    clock = Clock()
    tracker = retries(clock)
    assert tracker.failed("a", "uid-1") == 1.0
    clock.now += 0.25
    assert tracker.failed("a", "uid-1") == 0.75  # the remaining wait, nothing added
    assert tracker.failed("a") == 2.0  # counted once; failures without an attempt id always count
    assert tracker.failed("a") == 4.0


def test_success_and_forgetting_reset_the_history() -> None:
    clock = Clock()
    tracker = retries(clock)
    tracker.failed("a")
    tracker.failed("a")
    tracker.succeeded("a")
    assert tracker.wait("a") == 0.0
    assert tracker.failed("a") == 1.0  # from the initial delay again
    tracker.failed("b")
    tracker.forget(lambda key: key != "a")
    assert tracker.wait("a") == 0.0
    assert tracker.failed("a") == 1.0
    assert tracker.failed("b") == 2.0
