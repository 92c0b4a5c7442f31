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
            "allocatable": {"cpu": "4", **(allocatable or {})},
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


def test_requests_count_only_extended_resources_and_take_the_larger_of_init_and_apps() -> None:
    assert scheduling.pod_requests(pod({"akri.sh/cfg": 2}, init={"akri.sh/cfg": 3})) == Counter(
        {"akri.sh/cfg": 3}
    )
    assert scheduling.pod_requests(pod({"akri.sh/cfg": 2}, init={"akri.sh/x": 1})) == Counter(
        {"akri.sh/cfg": 2, "akri.sh/x": 1}
    )


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
    assert decision.message == "0/1 nodes are available: 1 Insufficient akri.sh/cfg."


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
        "1 node(s) didn't match Pod's node affinity/selector, 2 node(s) were not ready."
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
