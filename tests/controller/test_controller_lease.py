"""Pure leader-election decisions: who may write the Lease, and what."""

from __future__ import annotations

from datetime import UTC, datetime

from akri.controller.lease import (
    Decision,
    LeaseObserver,
    LeaseRecord,
    claimed,
    micro_time,
    record_of,
    released,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_record_of_a_lease_spec() -> None:
    spec = {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "t0",
        "renewTime": "t1",
        "leaseTransitions": 2,
    }
    assert record_of(spec) == LeaseRecord("a", 15, "t0", "t1", 2)
    assert record_of(None) == LeaseRecord("", 0)


def test_a_held_lease_expires_only_after_it_stopped_changing_for_its_duration() -> None:
    clock = Clock()
    observer = LeaseObserver(clock)
    observer.see(LeaseRecord("a", 10, renew_time="t1"))
    assert observer.decide("b") is Decision.WAIT
    clock.now = 9.0
    observer.see(LeaseRecord("a", 10, renew_time="t2"))  # renewed: the clock starts again
    clock.now = 18.0
    assert observer.decide("b") is Decision.WAIT
    observer.see(LeaseRecord("a", 10, renew_time="t2"))  # unchanged
    clock.now = 19.0
    assert observer.decide("b") is Decision.ACQUIRE


def test_holder_renews_and_free_leases_are_taken() -> None:
    observer = LeaseObserver(Clock())
    assert observer.decide("a") is Decision.ACQUIRE  # never seen
    observer.see(LeaseRecord("a", 10))
    assert observer.decide("a") is Decision.RENEW
    observer.see(LeaseRecord("", 1))
    assert observer.decide("b") is Decision.ACQUIRE


def test_claims_count_transitions_and_keep_the_acquire_time_on_renewal() -> None:
    first = claimed(None, "a", NOW, 15)
    assert first == {
        "holderIdentity": "a",
        "leaseDurationSeconds": 15,
        "acquireTime": "2026-01-01T12:00:00.123456Z",
        "renewTime": "2026-01-01T12:00:00.123456Z",
        "leaseTransitions": 0,
    }
    held = LeaseRecord("a", 15, "earlier", "earlier", 3)
    renewed = claimed(held, "a", NOW, 15)
    assert (renewed["acquireTime"], renewed["leaseTransitions"]) == ("earlier", 3)
    taken = claimed(held, "b", NOW, 15)
    assert (taken["holderIdentity"], taken["acquireTime"], taken["leaseTransitions"]) == (
        "b",
        micro_time(NOW),
        4,
    )
    after_release = claimed(LeaseRecord("", 1, "x", "y", 3), "b", NOW, 15)
    assert after_release["leaseTransitions"] == 3


def test_release_empties_the_holder() -> None:
    spec = released(LeaseRecord("a", 15, "t0", "t1", 2), NOW)
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 2
