"""The soak's checker, fed bad states on purpose: a checker that cannot fail proves nothing."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from akri import naming
from akri.sim.soak.checker import (
    DRA_DRIVER,
    Bounds,
    Checker,
    InstanceView,
    Snapshot,
    Use,
    claim_uses,
)

CFG = "cfg"
A = naming.instance_name(CFG, "foo0")
B = naming.instance_name(CFG, "foo1")
BOUNDS = Bounds(record=5, reclaim=10, discover=15, leave=20)
NODES = ("node-a", "node-b")


def instance(
    name: str = A,
    usage: Mapping[str, str] | None = None,
    capacity: int = 2,
    nodes: Collection[str] = NODES,
) -> InstanceView:
    return InstanceView(name, CFG, capacity, frozenset(nodes), dict(usage or {}))


def instance_level_use(node: str, pod: str, slot: int, name: str = A) -> Use:
    return Use(
        node, f"default/{pod}", "app", naming.resource_name(name), naming.slot_id(name, slot)
    )


def configuration_level_use(node: str, pod: str, vdev: int) -> Use:
    return Use(
        node,
        f"default/{pod}",
        "app",
        naming.resource_name(CFG),
        naming.configuration_level_device_id(CFG, vdev),
    )


def snapshot(
    at: float,
    instances: Collection[InstanceView] = (),
    uses: Collection[Use] = (),
    *,
    phases: Mapping[str, str] | None = None,
    visible: Collection[tuple[str, str]] | None = None,
    healthy: Collection[str] = NODES,
    crashes: Collection[str] = (),
) -> Snapshot:
    views = {view.name: view for view in instances}
    pods = {use.pod: "Running" for use in uses} | dict(phases or {})
    if visible is None:
        visible = {(node, view.name) for view in views.values() for node in view.nodes}
    return Snapshot(at, views, pods, list(uses), set(visible), set(healthy), list(crashes))


def rules(checker: Checker, *snapshots: Snapshot) -> list[str]:
    return [v.rule for s in snapshots for v in checker.check(s)]


def test_a_consistent_cluster_is_converged_and_clean() -> None:
    checker = Checker(BOUNDS)
    held = instance(usage={f"{A}-0": "node-a", f"{A}-1": f"C:{CFG}-0:node-b"})
    state = [held, instance(B)]
    uses = [instance_level_use("node-a", "p", 0), configuration_level_use("node-b", "q", 0)]
    assert rules(checker, snapshot(0, state, uses), snapshot(100, state, uses)) == []
    assert checker.converged
    assert checker.checks == 2


def test_the_known_over_commit_is_two_holders_at_once() -> None:
    """Issue 12: holder's record scrubbed while it runs on node-a; intruder gets its slot."""
    checker = Checker(BOUNDS)
    scrubbed = instance(capacity=1, usage={f"{A}-0": "node-b"})
    found = checker.check(
        snapshot(
            0,
            [scrubbed],
            [
                instance_level_use("node-a", "holder", 0),
                instance_level_use("node-b", "intruder", 0),
            ],
        )
    )
    assert [v.rule for v in found] == ["two-holders"]  # unrecorded only past its bound
    assert "default/holder on node-a, default/intruder on node-b" in found[0].message
    assert not checker.converged


def test_one_slot_through_both_resources_is_two_holders() -> None:
    checker = Checker(BOUNDS)
    state = [instance(usage={f"{A}-0": f"C:{CFG}-3:node-b"})]
    assert "two-holders" in rules(
        checker,
        snapshot(
            0,
            state,
            [instance_level_use("node-a", "p", 0), configuration_level_use("node-b", "q", 3)],
        ),
    )


def test_an_init_container_and_its_app_container_share_a_slot_as_one_pod() -> None:
    checker = Checker(BOUNDS)
    init = Use("node-a", "default/p", "init", naming.resource_name(A), f"{A}-0")
    assert (
        rules(
            checker,
            snapshot(
                0,
                [instance(usage={f"{A}-0": "node-a"})],
                [init, instance_level_use("node-a", "p", 0)],
            ),
        )
        == []
    )


def test_more_slots_in_use_than_capacity() -> None:
    checker = Checker(BOUNDS)
    state = [instance(capacity=1, usage={f"{A}-0": "node-a", f"{A}-1": "node-b"})]
    [violation] = checker.check(
        snapshot(
            0, state, [instance_level_use("node-a", "p", 0), instance_level_use("node-b", "q", 1)]
        )
    )
    assert violation.rule == "over-capacity"
    assert violation.message == (  # who uses what: the first thing to know about it
        f"{A} has 2 slots in use ({A}-0 by default/p on node-a, {A}-1 by default/q on node-b), "
        "capacity 1"
    )


def test_capacity_lowered_under_running_pods_is_not_a_violation_but_a_new_pod_beyond_it_is() -> (
    None
):
    checker = Checker(BOUNDS)
    usage = {f"{A}-0": "node-a", f"{A}-1": "node-b"}
    two = [instance_level_use("node-a", "p", 0), instance_level_use("node-b", "q", 1)]
    assert rules(checker, snapshot(0, [instance(capacity=2, usage=usage)], two)) == []
    assert rules(checker, snapshot(10, [instance(capacity=1, usage=usage)], two)) == []
    one = two[:1]
    assert rules(checker, snapshot(20, [instance(capacity=1, usage=usage)], one)) == []
    assert rules(
        checker,
        snapshot(
            21, [instance(capacity=1, usage=usage)], [*one, instance_level_use("node-b", "r", 1)]
        ),
    ) == ["over-capacity"]


def test_an_unrecorded_device_is_a_violation_only_past_its_bound() -> None:
    checker = Checker(BOUNDS)
    lost = [instance()]
    uses = [instance_level_use("node-a", "p", 0)]
    assert rules(checker, snapshot(0, lost, uses), snapshot(5, lost, uses)) == []
    assert not checker.converged
    assert rules(checker, snapshot(5.1, lost, uses)) == ["unrecorded"]
    assert rules(checker, snapshot(50, lost, uses)) == []  # reported once while it lasts


def test_a_virtual_device_without_a_binding_is_unrecorded() -> None:
    checker = Checker(BOUNDS)
    bound_elsewhere = [instance(usage={f"{A}-0": f"C:{CFG}-0:node-b"})]
    assert (
        rules(
            checker,
            snapshot(0, bound_elsewhere, [configuration_level_use("node-a", "p", 0)]),
            snapshot(6, bound_elsewhere, [configuration_level_use("node-a", "p", 0)]),
        )
        == [
            "stale",  # node-b's binding: no container there
            "unrecorded",
        ][1:]
    )


def test_the_bound_restarts_after_the_node_was_unhealthy() -> None:
    checker = Checker(BOUNDS)
    lost, uses = [instance()], [instance_level_use("node-a", "p", 0)]
    assert (
        rules(
            checker,
            snapshot(0, lost, uses),
            snapshot(4, lost, uses, healthy=["node-b"]),
            snapshot(8, lost, uses),
            snapshot(13, lost, uses),
        )
        == []
    )
    assert rules(checker, snapshot(13.1, lost, uses)) == ["unrecorded"]


def test_a_slot_nobody_uses_must_be_freed_within_the_reclaim_bound() -> None:
    checker = Checker(BOUNDS)
    stale = [instance(usage={f"{A}-1": "node-b"})]
    assert rules(checker, snapshot(0, stale), snapshot(10, stale)) == []
    assert rules(checker, snapshot(10.5, stale)) == ["stale"]


def test_a_deleted_or_finished_pod_uses_nothing() -> None:
    checker = Checker(BOUNDS)
    state = [instance(capacity=1, usage={f"{A}-0": "node-b"})]
    uses = [
        instance_level_use("node-a", "gone", 0),
        instance_level_use("node-a", "done", 0),
        instance_level_use("node-b", "q", 0),
    ]
    phases = {"default/done": "Succeeded", "default/q": "Running"}
    found = Snapshot(0, {A: state[0]}, phases, uses, {("node-a", A), ("node-b", A)}, NODES)
    assert rules(checker, found, replace(found, at=100)) == []


def test_a_slot_kept_for_a_deleted_pod_says_the_kubelet_still_lists_it() -> None:
    """Which side is wrong: the agent that keeps a slot no container uses, or the kubelet
    that still lists a container of a pod the API no longer has."""
    checker = Checker(BOUNDS)
    state = [instance(usage={f"{A}-0": "node-a"})]
    uses = [instance_level_use("node-a", "gone", 0)]
    found = Snapshot(0, {A: state[0]}, {}, uses, {("node-a", A), ("node-b", A)}, NODES)
    (violation,) = [*checker.check(found), *checker.check(replace(found, at=10.5))]
    assert violation.rule == "stale"
    assert violation.message.endswith("(its kubelet still lists it for default/gone (deleted))")


def test_a_visible_device_needs_an_instance_listing_its_node() -> None:
    checker = Checker(BOUNDS)
    only_a = [instance(nodes=["node-a"])]
    seen_by_both = {("node-a", A), ("node-b", A), ("node-b", B)}
    late = snapshot(16, only_a, visible=seen_by_both)
    assert rules(checker, snapshot(0, only_a, visible=seen_by_both)) == []
    assert {v.key: v.message.split(" (")[-1] for v in checker.check(late)} == {
        ("node-b", A): "it lists node-a)",
        ("node-b", B): "it does not exist)",
    }


def test_a_node_whose_device_went_offline_must_leave_the_instance() -> None:
    checker = Checker(BOUNDS)
    state = [instance()]
    assert rules(checker, snapshot(0, state, visible={("node-a", A)})) == []
    assert rules(checker, snapshot(21, state, visible={("node-a", A)})) == ["not-left"]


def test_a_crash_and_a_corrupt_value_are_reported_at_once() -> None:
    checker = Checker(BOUNDS)
    state = [instance(usage={f"{A}-0": "a:b"})]
    found = checker.check(snapshot(0, state, crashes=["agent node-a (exit 1)"]))
    assert sorted(v.rule for v in found) == ["corrupt", "crash"]
    assert rules(checker, snapshot(1, state, crashes=["agent node-a (exit 1)"])) == []
    assert checker.violations == found


def test_a_problem_that_ends_and_comes_back_is_reported_again() -> None:
    checker = Checker(BOUNDS)
    bad = snapshot(
        0,
        [instance(capacity=1, usage={f"{A}-0": "node-a"})],
        [instance_level_use("node-a", "p", 0), instance_level_use("node-b", "q", 0)],
    )
    good = snapshot(
        1,
        [instance(capacity=1, usage={f"{A}-0": "node-a"})],
        [instance_level_use("node-a", "p", 0)],
    )
    again = replace(bad, at=30)
    assert rules(checker, bad, good, again).count("two-holders") == 2


def claim(name: str, pod: str, *results: tuple[str, str | None]) -> dict[str, object]:
    """An allocated claim reserved for `pod`; each result is (device, shareID)."""
    return {
        "metadata": {"name": name, "namespace": "default"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "r", "driver": DRA_DRIVER, "pool": "p", "device": device}
                        | ({"shareID": share} if share else {})
                        for device, share in results
                    ]
                }
            },
            "reservedFor": [{"resource": "pods", "name": pod}],
        },
    }


def test_dra_claims_are_uses_and_the_record() -> None:
    """DRA mode: a share of a uniqueDevices Instance or one slot device is a slot in use; the
    claims are the record, so nothing is unrecorded, and over-capacity still counts."""
    nodes = {"default/p": "node-a", "default/q": "node-b"}
    shared = [
        claim("c1", "p", (A, "s1")),
        claim("c2", "q", (A, "s2")),
        claim("c3", "gone", (A, "s3")),
    ]
    uses = claim_uses(shared, nodes, {A})
    assert [(u.node, u.pod, u.resource, u.device) for u in uses] == [
        ("node-a", "default/p", naming.resource_name(A), f"{A}/s1"),
        ("node-b", "default/q", naming.resource_name(A), f"{A}/s2"),
    ]
    checker = Checker(BOUNDS)
    running = {"default/p": "Running", "default/q": "Running"}
    visible = {("node-a", A), ("node-b", A)}
    fits = Snapshot(0, {A: instance()}, running, uses, visible, NODES, claims_are_the_record=True)
    full = replace(fits, instances={A: instance(capacity=1)})
    assert rules(checker, fits, replace(fits, at=100)) == []
    assert rules(Checker(BOUNDS), full) == ["over-capacity"]

    slot = naming.slot_id(A, 0)
    twice = claim_uses([claim("c1", "p", (slot, None)), claim("c2", "q", (slot, None))], nodes, {A})
    assert {u.resource for u in twice} == {naming.resource_name(A)}
    twice_state = replace(fits, uses=twice)
    assert rules(Checker(BOUNDS), twice_state) == ["two-holders"]
