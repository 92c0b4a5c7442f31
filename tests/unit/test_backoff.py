from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from akri.backoff import Backoff


def test_delays_grow_geometrically_until_the_cap_without_jitter() -> None:
    backoff = Backoff(initial=0.5, maximum=4, factor=2, jitter=0)
    assert [backoff.next_delay() for _ in range(6)] == [0.5, 1, 2, 4, 4, 4]


def test_reset_starts_over() -> None:
    backoff = Backoff(initial=1, maximum=8, jitter=0)
    backoff.next_delay()
    backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() == 1


@given(st.integers(min_value=0, max_value=500), st.integers())
def test_delay_never_exceeds_the_cap_and_stays_positive(failures: int, seed: int) -> None:
    backoff = Backoff(initial=0.1, maximum=30, jitter=0.5)
    rng = random.Random(seed)
    for _ in range(failures):
        backoff.next_delay(rng)
    delay = backoff.next_delay(rng)
    assert 0 < delay <= 30


@pytest.mark.parametrize(
    "kwargs", [{"initial": 0}, {"initial": 5, "maximum": 1}, {"factor": 0.5}, {"jitter": 1}]
)
def test_invalid_parameters_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="invalid backoff"):
        Backoff(**kwargs)
