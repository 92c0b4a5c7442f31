"""Pure helpers of the emulator: JSONPath columns, ages, watch history, fault rules, versions."""

from __future__ import annotations

import asyncio
import copy
import datetime
from typing import Any

import pytest

from akri.sim.apiserver import ApiServer, jsonpath
from akri.sim.apiserver.errors import ApiError
from akri.sim.apiserver.faults import FaultRule, Faults, RequestInfo
from akri.sim.apiserver.operations import Selection, WatchFeed
from akri.sim.apiserver.patching import MERGE_PATCH
from akri.sim.apiserver.resources import version_priority
from akri.sim.apiserver.tables import human_age, wants_table
from akri.sim.apiserver.watchcache import ADDED, WatchEvent, WatchHub
from tests.conformance.support import DEADLINE_S, GROUP, PLURAL, VERSION, WIDGET_CRD, widget

OBJ = {
    "spec": {"nodes": ["a", "b"], "capacity": 2},
    "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "X", "status": "F"}]},
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".spec.capacity", [2]),
        ("{.spec.nodes}", [["a", "b"]]),
        (".spec.nodes[1]", ["b"]),
        (".spec.nodes[*]", ["a", "b"]),
        ('.status.conditions[?(@.type=="Ready")].status', ["True"]),
        (".spec.missing", []),
        (".spec.nodes[5]", []),
    ],
)
def test_jsonpath_subset(path: str, expected: list[object]) -> None:
    assert jsonpath.evaluate(path, OBJ) == expected


def test_unsupported_jsonpath_is_reported() -> None:
    with pytest.raises(ValueError, match="unsupported"):
        jsonpath.evaluate(".a..b", OBJ)


NOW = datetime.datetime(2025, 1, 10, 12, 0, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(5, "5s"), (119, "119s"), (150, "2m30s"), (600, "10m"), (3 * 3600 + 60, "3h1m"),
     (30 * 3600, "30h"), (3 * 86400, "3d"), (400 * 86400, "400d"), (800 * 86400, "2y70d")],
)  # fmt: skip
def test_human_age(seconds: int, shown: str) -> None:
    then = (NOW - datetime.timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert human_age(then, NOW) == shown


def test_human_age_of_garbage() -> None:
    assert human_age("yesterday", NOW) == "<unknown>"


def test_table_negotiation() -> None:
    assert wants_table("application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
    assert not wants_table("application/json, application/yaml")


def event(rv: int) -> WatchEvent:
    return WatchEvent(ADDED, {"metadata": {"name": str(rv)}}, rv)


def test_watch_history_replays_and_expires() -> None:
    hub = WatchHub(limit=3)
    for rv in range(1, 6):
        hub.publish(event(rv))
    replay, subscription = hub.subscribe(2)
    assert [e.rv for e in replay] == [3, 4, 5]
    subscription.close()
    with pytest.raises(ApiError) as caught:
        hub.subscribe(1)
    assert caught.value.code == 410


def test_live_subscribers_receive_and_end() -> None:
    hub = WatchHub(limit=10)
    _, subscription = hub.subscribe(None)
    hub.publish(event(1))
    hub.end_all()
    assert subscription.queue.get_nowait() == event(1)
    assert subscription.queue.get_nowait() is None


REQUEST = RequestInfo(
    verb="patch", resource="instances", kind="Instance", group="akri.sh", name="i-1"
)


@pytest.mark.parametrize(
    ("rule", "selected"),
    [
        (FaultRule(), True),
        (FaultRule(verb="PATCH"), True),
        (FaultRule(verb="get"), False),
        (FaultRule(resource="instance"), True),
        (FaultRule(resource="instances.akri.sh"), True),
        (FaultRule(resource="instances/status"), False),
        (FaultRule(name="i-2"), False),
        (FaultRule(namespace="x"), False),
    ],
)
def test_fault_rule_matching(rule: FaultRule, selected: bool) -> None:
    assert rule.selects(REQUEST) is selected


def test_fault_counts_and_delays_add_up() -> None:
    faults = Faults(seed=1)
    faults.add(verb="patch", status=409, count=2)
    faults.add(delay=0.5)
    decisions = [faults.decide(REQUEST) for _ in range(3)]
    assert [d.status for d in decisions] == [409, 409, None]
    assert all(d.delay == 0.5 for d in decisions)


def test_invalid_fault_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="cannot be injected"):
        FaultRule(status=418)
    with pytest.raises(ValueError, match="probability"):
        FaultRule(probability=2.0)


def test_version_priority_orders_like_kubernetes() -> None:
    versions = ["v1alpha1", "v2", "v1beta2", "v1", "v1beta1", "v0"]
    assert sorted(versions, key=version_priority) == [
        "v2",
        "v1",
        "v0",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
    ]


def test_writes_leave_every_stored_version_as_it_was() -> None:
    """Updates and patches build the next version beside the stored one (no copy of it), which
    watch events, lists and earlier answers share: none of them may change afterwards."""
    ops = ApiServer().operations
    crds = ops.kind("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    ops.create(crds, None, copy.deepcopy(WIDGET_CRD))
    widgets = ops.kind(GROUP, VERSION, PLURAL)
    answers = [ops.create(widgets, "default", widget("w", nodes=["a"]))]

    def changed(**spec: Any) -> dict[str, Any]:
        body = copy.deepcopy(answers[-1])
        body["spec"].update(spec)
        body["status"] = {"ready": True, "count": len(answers)}
        return body

    answers.append(ops.update(widgets, "default", "w", changed(color="blue")))
    answers.append(ops.update(widgets, "default", "w", changed(), "status"))
    answers.append(ops.update(widgets, "default", "w", changed(nodes=["a", "b"]), "status"))
    patch = {"spec": {"nodes": ["c"]}, "status": {"ready": False}}
    answers.append(ops.patch(widgets, "default", "w", MERGE_PATCH, patch))
    answers.append(ops.patch(widgets, "default", "w", MERGE_PATCH, patch, "status"))
    answers.append(ops.update(widgets, "default", "w", copy.deepcopy(answers[-1])))  # no-op
    snapshots = copy.deepcopy(answers)
    latest = ops.patch(widgets, "default", "w", MERGE_PATCH, {"spec": {"nodes": ["d"]}})
    body = copy.deepcopy(latest)
    body["status"] = {"ready": True, "count": 99}
    assert ops.update(widgets, "default", "w", body, "status")["status"]["count"] == 99
    assert answers == snapshots
    versions = [int(a["metadata"]["resourceVersion"]) for a in answers]
    assert versions[:-1] == sorted(set(versions))  # every write but the no-op stored a version
    assert versions[-1] == versions[-2]
    nodes = [a["spec"]["nodes"] for a in answers]
    assert nodes == [["a"], ["a"], ["a"], ["a"], ["c"], ["c"], ["c"]]


async def test_a_watch_gets_the_objects_of_its_namespace_only() -> None:
    ops = ApiServer().operations
    ops.create(ops.kind("", "v1", "namespaces"), None, {"metadata": {"name": "other"}})
    config_maps = ops.kind("", "v1", "configmaps")
    since = str(ops.store.revision)
    here = ops.watch(config_maps, Selection(namespace="default"), since)
    everywhere = ops.watch(config_maps, Selection(), since)
    for namespace in ("other", "default"):
        created = ops.create(config_maps, namespace, {"metadata": {"name": "cm"}})
        changed = copy.deepcopy(created)
        changed["data"] = {"k": "v"}
        ops.update(config_maps, namespace, "cm", changed)
    assert await shown(here, 2) == [("ADDED", "default"), ("MODIFIED", "default")]
    assert await shown(everywhere, 4) == [
        ("ADDED", "other"),
        ("MODIFIED", "other"),
        ("ADDED", "default"),
        ("MODIFIED", "default"),
    ]


async def shown(feed: WatchFeed, count: int) -> list[tuple[str, str]]:
    """The next `count` events of a watch as (type, namespace)."""
    found = []
    async with asyncio.timeout(DEADLINE_S):
        for _ in range(count):
            event = await feed.next()
            assert isinstance(event, tuple)
            found.append((event[0], event[1]["metadata"]["namespace"]))
    return found
