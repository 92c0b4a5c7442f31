"""The protocol floor's arithmetic: which messages an admitted pod costs, and on how many nodes."""

from __future__ import annotations

import pytest
from bench_protocol_floor import MessageCpu, saturation
from report import OURS_PER_POD, Outcome, floor_arguments

from akri.sim.report import Row


def costs() -> MessageCpu:
    """Each side a distinct power of two, so any term counted wrongly shows in the sum."""
    return MessageCpu(
        allocate_kubelet=1,
        allocate_plugin=2,
        put_agent=4,
        put_server=8,
        event_server=16,
        event_watcher=32,
        list_plugin=64,
        list_kubelet=128,
    )


def test_a_pod_costs_an_allocate_and_a_write_once_and_an_event_and_a_list_per_node() -> None:
    cpu = costs()
    assert cpu.agents(8) == 2 + 4 + 8 * (32 + 64)
    assert cpu.peers(8) == 1 + 8 + 8 * (16 + 128)
    assert cpu.per_pod(8) == cpu.agents(8) + cpu.peers(8)
    assert cpu.per_pod(1) == 255
    assert cpu.lists(8) == 8 * (64 + 128)
    assert cpu.events(8) == 8 * (16 + 32)


def test_saturated_cores_bound_throughput_and_littles_law_bounds_the_mean_latency() -> None:
    bound = saturation(cpu_per_pod=0.004, cores=2, in_flight=8)
    assert bound.throughput == pytest.approx(500)
    assert bound.mean_latency == pytest.approx(0.016)  # 8 in flight / 500 per second


def test_the_report_compares_the_floor_with_the_contention_run_of_the_same_report() -> None:
    contention = Outcome(
        "bench_agent_contention",
        [Row("realistic: wall time", "876 ms"), Row(OURS_PER_POD[1], "6.00 ms / 2.26 ms")],
        15.0,
        0,
    )
    other = Outcome("bench_agent_latency", [Row(OURS_PER_POD[1], "1.00 ms / 1.00 ms")], 1.0, 0)
    assert floor_arguments([other, contention]) == ["--ours", "6.00", "2.26"]
    assert floor_arguments([other]) == []
