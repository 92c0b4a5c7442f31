"""The adaptive write window: grows while the server keeps up, shrinks when it pushes back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from akri.window import AdaptiveWindow, Ticket

FAST = 0.001


def send(window: AdaptiveWindow, count: int) -> list[Ticket]:
    tickets = []
    for _ in range(count):
        assert window.room
        tickets.append(window.admit())
    return tickets


def test_room_is_the_limit() -> None:
    window = AdaptiveWindow(initial=3)
    send(window, 3)
    assert not window.room


def test_it_doubles_each_round_trip_while_starting() -> None:
    window = AdaptiveWindow(initial=4, maximum=100)
    for expected in (8, 16, 32):
        for ticket in send(window, int(window.limit)):
            window.succeeded(ticket, FAST)
        assert window.limit == expected


def test_a_429_halves_it_and_growth_becomes_additive() -> None:
    window = AdaptiveWindow(initial=16)
    window.throttled(window.admit())
    assert window.limit == 8
    assert not window.starting
    for ticket in send(window, 8):  # one round trip adds one
        window.succeeded(ticket, FAST)
    assert 8.9 < window.limit < 9.0


def test_refusals_of_one_round_trip_shrink_it_once() -> None:
    window = AdaptiveWindow(initial=16)
    tickets = send(window, 16)
    for ticket in tickets[:10]:
        window.throttled(ticket)
    assert window.limit == 8
    later = send(window, 1)[0]
    window.throttled(later)  # sent after the decrease: news
    assert window.limit == 4


def test_slow_answers_shrink_it_by_a_tenth_fast_ones_do_not() -> None:
    window = AdaptiveWindow(initial=10, tolerance=2.0, floor=0.05)
    a, b, c = send(window, 3)
    window.succeeded(a, 0.1)
    window.succeeded(b, 0.19)  # within twice the fastest: grows
    assert window.limit == 12
    window.succeeded(c, 0.25)
    assert window.limit == pytest.approx(10.8)


def test_latency_under_the_floor_never_counts_as_queueing() -> None:
    window = AdaptiveWindow(initial=4, floor=0.05)
    a, b = send(window, 2)
    window.succeeded(a, 0.001)
    window.succeeded(b, 0.04)  # 40 times the fastest, but under the floor
    assert window.limit == 6


def test_other_failures_only_free_their_place() -> None:
    window = AdaptiveWindow(initial=2)
    a, _ = send(window, 2)
    window.failed(a)
    assert window.limit == 2
    assert window.room


def test_parameters_are_checked() -> None:
    with pytest.raises(ValueError, match="invalid window"):
        AdaptiveWindow(initial=100, maximum=10)
    with pytest.raises(ValueError, match=r"tolerance 1\.0"):
        AdaptiveWindow(tolerance=1.0)


@given(
    st.lists(
        st.tuples(st.sampled_from(["ok", "throttled", "failed"]), st.floats(0.0, 5.0)),
        max_size=300,
    )
)
def test_it_stays_within_its_bounds(outcomes: list[tuple[str, float]]) -> None:
    window = AdaptiveWindow(initial=4, minimum=2, maximum=20)
    pending: list[Ticket] = []
    for outcome, latency in outcomes:
        while window.room:
            pending.append(window.admit())
        ticket = pending.pop(0)
        if outcome == "ok":
            window.succeeded(ticket, latency)
        elif outcome == "throttled":
            window.throttled(ticket)
        else:
            window.failed(ticket)
        assert 2 <= window.limit <= 20
        assert window.in_flight == len(pending) <= 20
