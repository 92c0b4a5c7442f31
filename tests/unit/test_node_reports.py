"""Per-node rows and the conditions computed from them (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

from akri.agent.plugins.desired import Level, PluginSpec
from akri.agent.plugins.problems import grouped
from akri.api import NodeProblem, NodeReport
from akri.node_reports import aggregated, with_problems, withdrawn

T0 = datetime(2026, 1, 1, tzinfo=UTC)
OFFLINE, PLUGIN = "DeviceOffline", "PluginUnavailable"


def test_a_node_changes_only_its_own_row_and_its_own_types() -> None:
    rows = with_problems([], "b", [OFFLINE], {OFFLINE: "gone"}, keep_empty=False)
    rows = with_problems(rows, "a", [PLUGIN], {PLUGIN: "no socket"}, keep_empty=False)
    rows = with_problems(rows, "a", [OFFLINE], {OFFLINE: "gone too"}, keep_empty=False)
    assert rows == [
        NodeReport(
            node="a",
            problems=[
                NodeProblem(type=OFFLINE, message="gone too"),
                NodeProblem(type=PLUGIN, message="no socket"),
            ],
        ),
        NodeReport(node="b", problems=[NodeProblem(type=OFFLINE, message="gone")]),
    ]
    cleared = with_problems(rows, "b", [OFFLINE], {}, keep_empty=False)
    assert [r.node for r in cleared] == ["a"]  # an Instance keeps no empty row
    kept = with_problems(rows, "b", [OFFLINE], {}, keep_empty=True)
    assert kept[1] == NodeReport(node="b", problems=[])  # a Configuration lists every node


def test_long_messages_are_cut() -> None:
    (row,) = with_problems([], "a", [PLUGIN], {PLUGIN: "x" * 10_000}, keep_empty=False)
    assert len(row.problems[0].message) == 4096


def test_conditions_follow_the_rows_left_after_a_withdrawal() -> None:
    rows = with_problems([], "a", [PLUGIN], {PLUGIN: "refused"}, keep_empty=True)
    rows = with_problems(rows, "b", [PLUGIN], {}, keep_empty=True)
    before = aggregated([], rows, [PLUGIN, OFFLINE], ready=True, generation=2, now=T0)
    assert {c.type: (c.status, c.reason, c.message) for c in before} == {
        PLUGIN: ("True", PLUGIN, "node a: refused"),
        "Ready": ("False", PLUGIN, "node a: refused"),
    }
    left = withdrawn(rows, lambda node: node != "a")
    after = aggregated(before, left, [PLUGIN, OFFLINE], ready=True, generation=2, now=T0)
    assert {c.type: (c.status, c.reason) for c in after} == {
        PLUGIN: ("False", "Resolved"),
        "Ready": ("True", "Discovering"),
    }
    assert all(c.observed_generation == 2 for c in after)


def test_plugin_problems_go_to_their_instance_and_configuration() -> None:
    instance = PluginSpec("ns", Level.INSTANCE, "cfg-8120fe")
    other = PluginSpec("ns", Level.INSTANCE, "cfg-a19705")
    configuration = PluginSpec("ns", Level.CONFIGURATION, "cfg")
    orphan = PluginSpec("ns", Level.INSTANCE, "unknown-000000")
    problems = {other: "b", instance: "a", configuration: "c", orphan: "d"}
    owners = {"cfg-8120fe": "cfg", "cfg-a19705": "cfg"}
    instances, configurations = grouped(problems, lambda _ns, name: owners.get(name))
    assert instances == {
        ("ns", "cfg-8120fe"): "a",
        ("ns", "cfg-a19705"): "b",
        ("ns", "unknown-000000"): "d",
    }
    assert configurations == {("ns", "cfg"): "c; a; b"}  # by resource name
