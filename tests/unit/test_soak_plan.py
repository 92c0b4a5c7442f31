"""The soak's plan: a seed gives one schedule, every fault kind, faults that do not overlap."""

from __future__ import annotations

import itertools

from akri.sim.soak.plan import ALL_KINDS, PAUSE_S, Event, default_layout, make_plan

LAYOUT = default_layout(8, offline_grace=4, node_grace=10)
NODE_FAULTS = ("agent-kill", "node-loss", "kubelet-restart")
API_FAULTS = ("latency", "errors", "pause")


def test_a_seed_replays_exactly_and_another_seed_differs() -> None:
    assert make_plan(7, 300, LAYOUT) == make_plan(7, 300, LAYOUT)
    assert make_plan(7, 300, LAYOUT) != make_plan(8, 300, LAYOUT)


def test_a_ten_minute_plan_has_every_kind_and_one_full_pause() -> None:
    plan = make_plan(1, 600, LAYOUT)
    kinds = {e.kind for e in plan}
    assert kinds == set(ALL_KINDS) - {"blink", "hold-offline"}  # both are offline events
    assert [e.duration for e in plan if e.kind == "pause"] == [PAUSE_S]
    assert all(0 <= e.at < 600 + 3 for e in plan)
    assert {e.count for e in plan if e.kind == "pod"} == {1, 2, 3}
    assert any(e.init for e in plan if e.kind == "pod")
    assert {e.resource for e in plan if e.kind == "pod"} >= {"cam", "mic"}  # configuration level


def test_a_pod_then_its_device_offline_past_the_grace() -> None:
    plan = make_plan(3, 600, LAYOUT)
    pods = {(e.node, e.resource): e for e in plan if e.kind == "pod"}
    held = [
        e
        for e in plan
        if e.kind == "offline"
        and e.duration > LAYOUT.offline_grace
        and e.device is not None
        and (e.node, LAYOUT.instance(e.device, e.node)) in pods
    ]
    assert held


def _overlaps(events: list[Event]) -> bool:
    ordered = sorted(events, key=lambda e: e.at)
    return any(b.at < a.at + a.duration for a, b in itertools.pairwise(ordered))


def test_one_fault_at_a_time_per_node_and_on_the_api() -> None:
    for seed in range(5):
        plan = make_plan(seed, 600, LAYOUT)
        for node in LAYOUT.nodes:
            assert not _overlaps([e for e in plan if e.kind in NODE_FAULTS and e.node == node])
        assert not _overlaps([e for e in plan if e.kind in API_FAULTS])
        assert not _overlaps([e for e in plan if e.kind == "node-loss"])


def test_only_the_kinds_asked_for() -> None:
    plan = make_plan(1, 120, LAYOUT, ["pod", "agent-kill"])
    assert {e.kind for e in plan} == {"pod", "agent-kill"}
