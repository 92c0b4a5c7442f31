"""Offline grace of shared devices, on a clock the test moves."""

from __future__ import annotations

from akri.agent.offline import OfflineGrace

GRACE = 300.0


def test_a_missing_device_is_left_only_after_the_grace() -> None:
    grace = OfflineGrace(GRACE)
    assert grace.expired(["i"], now=1000.0) == []
    assert grace.next_expiry() == 1300.0
    assert grace.expired(["i"], now=1299.9) == []
    assert grace.expired(["i"], now=1300.0) == ["i"]


def test_a_device_back_within_the_grace_starts_over() -> None:
    grace = OfflineGrace(GRACE)
    grace.expired(["i"], now=0.0)
    assert grace.expired([], now=200.0) == []  # back: the timer is forgotten
    assert grace.next_expiry() is None
    assert grace.expired(["i"], now=250.0) == []  # gone again: a new full grace
    assert grace.expired(["i"], now=549.0) == []
    assert grace.expired(["i"], now=550.0) == ["i"]


def test_timers_are_per_instance() -> None:
    grace = OfflineGrace(GRACE)
    grace.expired(["a"], now=0.0)
    assert grace.expired(["a", "b"], now=100.0) == []
    assert grace.next_expiry() == 300.0
    assert grace.expired(["a", "b"], now=300.0) == ["a"]
    assert grace.expired(["a", "b"], now=400.0) == ["a", "b"]


def test_an_expired_instance_stays_expired_until_it_is_left() -> None:
    """A failed leave is retried in the next round, not after another grace."""
    grace = OfflineGrace(GRACE)
    grace.expired(["i"], now=0.0)
    assert grace.expired(["i"], now=300.0) == ["i"]
    assert grace.expired(["i"], now=301.0) == ["i"]
    assert grace.expired([], now=302.0) == []


def test_zero_grace_leaves_at_once() -> None:
    assert OfflineGrace(0.0).expired(["i"], now=5.0) == ["i"]
