"""Durations in settings: units, plain numbers, and clear refusals."""

from __future__ import annotations

import pytest

from akri.durations import parse_duration


@pytest.mark.parametrize(
    ("value", "seconds"),
    [("300s", 300.0), ("5m", 300.0), ("1.5s", 1.5), ("250ms", 0.25), ("2h", 7200.0),
     ("42", 42.0), (" 7 s ", 7.0), (".5", 0.5), (3, 3.0), (0.5, 0.5)],
)  # fmt: skip
def test_durations(value: object, seconds: float) -> None:
    assert parse_duration(value) == seconds


@pytest.mark.parametrize(
    "value", ["soon", "5 minutes", "-1", "1d", "", True, -2, "s", "5x", "1.2.3s", "5 m s", "1e3"]
)
def test_not_durations(value: object) -> None:
    with pytest.raises(ValueError, match=r"duration|negative"):
        parse_duration(value)
