"""Durations in settings: "300s", "5m", "250ms", "2h" or plain seconds, always stored as seconds.

Operators write grace periods with units in Helm values and env vars; every component reads them
the same way, and a typo is refused at start with the offending value.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

OFFLINE_GRACE_S = 300.0
"""How long a device may be missing on a node before the node leaves its Instance, unless set
(the agent's OFFLINE_GRACE, `akri sim --offline-grace`)."""

_DURATION = re.compile(r"^(?P<number>\d+(\.\d*)?|\.\d+)\s*(?P<unit>ms|s|m|h)?$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(value: object) -> float:
    """Seconds in `value`: a number, or a string of a number with an optional unit."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        match = _DURATION.match(str(value).strip())
        if match is None:
            raise ValueError(
                f"{value!r} is not a duration (use e.g. 300s, 5m, 1.5s, 250ms or plain seconds)"
            )
        seconds = float(match["number"]) * _UNIT_SECONDS[match["unit"]]
    if seconds < 0:
        raise ValueError(f"{value!r} is negative")
    return seconds


Duration = Annotated[float, BeforeValidator(parse_duration)]
"""A pydantic field type: seconds, given with or without a unit."""


def format_duration(seconds: float) -> str:
    """`seconds` as an operator writes it, in the largest unit that keeps it whole ("8760h",
    "5m", "250ms", "1.5s"); parse_duration reads it back."""
    for unit, size in (("h", 3600.0), ("m", 60.0), ("s", 1.0)):
        if seconds >= size and (seconds / size).is_integer():
            return f"{seconds / size:.0f}{unit}"
    if seconds < 1 and (seconds * 1000).is_integer():
        return f"{seconds * 1000:.0f}ms"
    return f"{seconds:g}s"
