"""Pure: the offline grace period of shared devices (docs/design.md §6), on an injected clock.

A shared device that drops out of the device list is usually a blip (a handler restarting, a
camera rebooting); leaving its Instance at once would make the controller delete and recreate
brokers. So this node stays in `nodes` until the device has been missing for `grace` seconds;
a device back within the grace costs no spec write (only its DeviceOffline report, see
`offline_reports`).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta


class OfflineGrace:
    def __init__(self, grace: float) -> None:
        self.grace = grace
        self._missing_since: dict[str, float] = {}

    def expired(self, missing: Iterable[str], now: float) -> list[str]:
        """Of the Instances missing now, those missing for the whole grace, sorted.

        Instances not named are present again (or gone): their timers are forgotten.
        """
        since = {name: self._missing_since.get(name, now) for name in missing}
        self._missing_since = since
        return sorted(name for name, start in since.items() if now - start >= self.grace)

    @property
    def missing(self) -> set[str]:
        """The Instances missing as of the last `expired` call."""
        return set(self._missing_since)

    def next_expiry(self) -> float | None:
        """When the earliest timer runs out, or None when no device is missing."""
        if not self._missing_since:
            return None
        return min(self._missing_since.values()) + self.grace


def offline_message(since: datetime, grace: float) -> str:
    """What DeviceOffline says: since when, and when this node leaves unless it comes back."""
    leaves = since + timedelta(seconds=grace)
    return (
        f"device offline since {since:%Y-%m-%dT%H:%M:%SZ}: this node leaves the Instance in "
        f"{grace:g} s (at {leaves:%Y-%m-%dT%H:%M:%SZ}) unless the device comes back"
    )
