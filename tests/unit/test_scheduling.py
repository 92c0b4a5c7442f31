"""Where a Pod fits (the simulator's scheduler rules)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from akri.sim import scheduling


def node(
    name: str,
    allocatable: dict[str, str] | None = None,
    *,
    ready: bool = True,
    labels: dict[str, str] | None = None,
    unschedulable: bool = False,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"unschedulable": unschedulable},
        "status": {
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110", **(allocatable or {})},
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def pod(
    requests: dict[str, int] | None = None,
    *,
    init: dict[str, int] | None = None,
    node_name: str | None = None,
    phase: str = "Pending",
    affinity_nodes: list[str] | None = None,
    selector: dict[str, str] | None = None,
) -> dict[str, Any]:
    def container(name: str, wanted: dict[str, int]) -> dict[str, Any]:
        limits = {k: str(v) for k, v in wanted.items()}
        return {"name": name, "resources": {"limits": limits, "requests": {"cpu": "1"}}}

    spec: dict[str, Any] = {"containers": [container("app", requests or {})]}
    if init is not None:
        spec["initContainers"] = [container("init", init)]
    if node_name:
        spec["nodeName"] = node_name
    if selector:
        spec["nodeSelector"] = selector
    if affinity_nodes is not None:
        term = {
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": affinity_nodes}]
        }
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        }
    return {"metadata": {"name": "p", "uid": "u"}, "spec": spec, "status": {"phase": phase}}


def test_requests_take_the_larger_of_init_and_apps_and_one_pod() -> None:
    assert scheduling.pod_requests(pod({"akri.sh/cfg": 2}, init={"akri.sh/cfg": 3})) == Counter(
        {"akri.sh/cfg": 3, "cpu": 1000, "pods": 1}
    )
    assert scheduling.pod_requests(pod({"akri.sh/cfg": 2}, init={"akri.sh/x": 1})) == Counter(
        {"akri.sh/cfg": 2, "akri.sh/x": 1, "cpu": 1000, "pods": 1}
    )


def test_cpu_and_memory_are_read_as_the_scheduler_reads_them() -> None:
    p = pod()
    p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "250m", "memory": "1Mi"}}
    p["spec"]["containers"].append({"name": "b", "resources": {"limits": {"cpu": "0.5"}}})
    p["spec"]["overhead"] = {"memory": "1k"}
    assert scheduling.pod_requests(p) == Counter({"cpu": 750, "memory": 2**20 + 1000, "pods": 1})


# Issue 27: 253 pods went to a node whose `pods` allocatable is 110, with no reason given. The
# messages are the real scheduler's (1.36, checked on ../shared/k8s): filter reasons, then
# the DynamicResources and preemption PostFilter messages.
NO_PREEMPTION = (
    "preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod."
)
NOT_HELPFUL = "preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."


def test_a_node_with_as_many_pods_as_it_allows_takes_no_more() -> None:
    full = [node("a", {"pods": "2"}), node("b", {"pods": "1"})]
    used = scheduling.requested_on_nodes(
        [pod(node_name="a", phase="Running")] * 2 + [pod(node_name="b", phase="Running")]
    )
    decision = scheduling.choose_node(pod(), full, used)
    assert decision.node is None
    assert decision.message == (
        "0/2 nodes are available: 2 Too many pods. " + NO_PREEMPTION.format(n=2)
    )
    ended = scheduling.requested_on_nodes([pod(node_name="b", phase="Succeeded")])
    assert scheduling.choose_node(pod(), full, ended).node == "a"


def test_cpu_and_memory_beyond_the_node_give_every_reason_and_no_preemption() -> None:
    big = pod()
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "5", "memory": "9Gi"}}
    decision = scheduling.choose_node(big, [node("a"), node("b")], {}, _NoClaims())
    assert decision.message == (
        "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. "
        "no new claims to deallocate, " + NOT_HELPFUL.format(n=2)
    )


def test_mixed_reasons_say_where_preemption_could_help() -> None:
    nodes = [node("a", {"pods": "0"}, labels={"zone": "y"}), node("b", labels={"zone": "x"})]
    decision = scheduling.choose_node(pod(selector={"zone": "y"}), nodes, {})
    assert decision.message == (
        "0/2 nodes are available: 1 Too many pods, 1 node(s) didn't match Pod's node "
        "affinity/selector. preemption: 0/2 nodes are available: 1 No preemption victims found "
        "for incoming pod, 1 Preemption is not helpful for scheduling."
    )


def test_replicas_of_one_controller_are_spread_over_the_nodes() -> None:
    """Issue 27: both controller replicas landed on one node; the default topology spreading
    puts a controller's pods on the node with the fewest of them."""
    replica = pod()
    replica["metadata"]["ownerReferences"] = [{"uid": "rs-1", "controller": True}]
    nodes = [node("a"), node("b")]
    first = scheduling.choose_node(replica, nodes, {})
    spread = {first.node or "": Counter({"rs-1": 1})}
    second = scheduling.choose_node(replica, nodes, {}, spread=spread)
    assert {first.node, second.node} == {"a", "b"}
    assert scheduling.choose_node(pod(), nodes, {}, spread=spread).node == "a"  # others: by name


class _NoClaims:
    """The DynamicResources filter of a cluster that serves DRA, for a pod without claims."""

    def resources(self, node: scheduling.Object) -> set[str]:
        return set()

    def problem(self, pod: scheduling.Object, node: scheduling.Object) -> str | None:
        return None


def test_fits_on_the_node_with_most_spare_devices() -> None:
    nodes = [node("a", {"akri.sh/cfg": "1"}), node("b", {"akri.sh/cfg": "3"})]
    decision = scheduling.choose_node(pod({"akri.sh/cfg": 1}), nodes, {})
    assert decision.node == "b"
    assert decision.message == ""


def test_devices_in_use_by_running_pods_are_not_free() -> None:
    nodes = [node("a", {"akri.sh/cfg": "2"})]
    used = scheduling.requested_on_nodes(
        [
            pod({"akri.sh/cfg": 1}, node_name="a", phase="Running"),
            pod({"akri.sh/cfg": 1}, node_name="a", phase="Succeeded"),
        ]
    )
    assert scheduling.choose_node(pod({"akri.sh/cfg": 1}), nodes, used).node == "a"
    decision = scheduling.choose_node(pod({"akri.sh/cfg": 2}), nodes, used)
    assert decision.node is None
    assert decision.message == (
        "0/1 nodes are available: 1 Insufficient akri.sh/cfg. " + NO_PREEMPTION.format(n=1)
    )


def test_no_fit_explains_every_node() -> None:
    nodes = [
        node("a", {"akri.sh/cfg": "1"}),
        node("b", {"akri.sh/cfg": "5"}, ready=False),
        node("c", {"akri.sh/cfg": "5"}, unschedulable=True),
        node("d"),
    ]
    decision = scheduling.choose_node(
        pod({"akri.sh/cfg": 2}, affinity_nodes=["a", "b", "c"]), nodes, {}
    )
    assert decision.node is None
    assert decision.message == (
        "0/4 nodes are available: 1 Insufficient akri.sh/cfg, "
        "1 node(s) didn't match Pod's node affinity/selector, 2 node(s) were not ready. "
        "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
    )


def test_node_affinity_on_metadata_name_pins_the_pod() -> None:
    nodes = [node("a", {"akri.sh/i": "1"}), node("b", {"akri.sh/i": "9"})]
    assert (
        scheduling.choose_node(pod({"akri.sh/i": 1}, affinity_nodes=["a"]), nodes, {}).node == "a"
    )


def test_pod_without_device_requests_fits_any_ready_node() -> None:
    assert scheduling.choose_node(pod(), [node("a", ready=False), node("b")], {}).node == "b"


@pytest.mark.parametrize(
    ("requirement", "value", "expected"),
    [
        ({"operator": "In", "values": ["x"]}, "x", True),
        ({"operator": "In", "values": ["x"]}, None, False),
        ({"operator": "NotIn", "values": ["x"]}, "y", True),
        ({"operator": "Exists"}, "", True),
        ({"operator": "DoesNotExist"}, None, True),
        ({"operator": "Gt", "values": ["3"]}, "4", True),
        ({"operator": "Lt", "values": ["3"]}, "4", False),
        ({"operator": "Gt", "values": ["3"]}, "four", False),
        ({"operator": "Bogus"}, "x", False),
    ],
)
def test_selector_operators(requirement: dict[str, Any], value: str | None, expected: bool) -> None:
    labels = {} if value is None else {"zone": value}
    term = {"matchExpressions": [{"key": "zone", **requirement}]}
    p = pod()
    p["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    assert scheduling.matches_node_selection(p, node("a", labels=labels)) is expected


def test_node_selector_labels_must_all_match() -> None:
    assert scheduling.matches_node_selection(pod(selector={"a": "1"}), node("n", labels={"a": "1"}))
    assert not scheduling.matches_node_selection(
        pod(selector={"a": "1", "b": "2"}), node("n", labels={"a": "1"})
    )
