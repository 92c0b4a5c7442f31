"""A pool of DRA devices as ResourceSlices: the writes of each change (docs/design.md §8a)."""

from __future__ import annotations

import copy
from typing import Any

from akri.dra.slices import (
    MAX_DEVICES_PER_SLICE,
    Plan,
    Pool,
    local_pool_name,
    plan,
    shared_pool_name,
    slice_name,
)

JSON = dict[str, Any]


def devices(n: int, prefix: str = "d") -> list[JSON]:
    return [{"name": f"{prefix}{i:04}", "attributes": {}} for i in range(n)]


def stored(result: Plan, rv: int = 1) -> list[JSON]:
    """The slices the API holds after `result` applied to nothing."""
    out = []
    for item in result.creates + result.updates:
        item = {**item, "metadata": {**item["metadata"], "resourceVersion": str(rv)}}
        out.append(item)
    return out


def apply(current: list[JSON], result: Plan) -> list[JSON]:
    """The API after `result`: deletes, updates (resourceVersion bumped), creates."""
    by_name = {s["metadata"]["name"]: s for s in copy.deepcopy(current)}
    for name, version in result.deletes:
        assert by_name[name]["metadata"]["resourceVersion"] == version
        del by_name[name]
    for item in result.updates:
        name = item["metadata"]["name"]
        assert by_name[name]["metadata"]["resourceVersion"] == item["metadata"]["resourceVersion"]
        new_rv = str(int(item["metadata"]["resourceVersion"]) + 1)
        by_name[name] = {**item, "metadata": {**item["metadata"], "resourceVersion": new_rv}}
    for item in copy.deepcopy(result.creates):
        assert item["metadata"]["name"] not in by_name
        by_name[item["metadata"]["name"]] = {
            **item,
            "metadata": {**item["metadata"], "resourceVersion": "1"},
        }
    return list(by_name.values())


def pool_devices(slices: list[JSON]) -> list[str]:
    return sorted(d["name"] for s in slices for d in s["spec"]["devices"])


def local(n: int, **kw: Any) -> Pool:
    return Pool(local_pool_name("cfg", "node-a"), "node-a", devices(n), **kw)


def test_new_pool_is_created_in_slices_of_at_most_the_limit() -> None:
    result = plan(local(1000), [])
    assert not result.deletes
    assert not result.updates
    assert len(result.creates) == 16
    for item in result.creates:
        spec = item["spec"]
        assert len(spec["devices"]) <= MAX_DEVICES_PER_SLICE
        assert spec["driver"] == "akri.sh"
        assert spec["nodeName"] == "node-a"
        assert spec["pool"] == {
            "name": "cfg/node/node-a",
            "generation": 1,
            "resourceSliceCount": 16,
        }
    assert pool_devices(result.creates) == [d["name"] for d in devices(1000)]


def test_nothing_is_written_when_nothing_changed() -> None:
    current = apply([], plan(local(130), []))
    assert not plan(local(130), current)


def test_one_changed_slice_is_updated_in_place_keeping_the_generation() -> None:
    current = apply([], plan(local(130), []))
    pool = local(130)
    pool.devices[0]["attributes"] = {"x": {"string": "y"}}
    result = plan(pool, current)
    assert not result.creates
    assert not result.deletes
    (update,) = result.updates
    assert update["spec"]["pool"]["generation"] == 1
    assert update["metadata"]["resourceVersion"] == "1"


def test_a_change_touching_several_slices_bumps_the_generation_on_all() -> None:
    current = apply([], plan(local(130), []))
    pool = local(130)
    pool.devices.append({"name": "a", "attributes": {}})  # sorts first: every slice shifts
    result = plan(pool, current)
    assert len(result.updates) == 3
    assert {u["spec"]["pool"]["generation"] for u in result.updates} == {2}


def test_growing_past_a_slice_boundary_creates_and_bumps() -> None:
    current = apply([], plan(local(64), []))
    result = plan(local(65), current)
    assert len(result.creates) == 1
    assert len(result.updates) == 1
    after = apply(current, result)
    assert {s["spec"]["pool"]["generation"] for s in after} == {2}
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in after} == {2}
    assert pool_devices(after) == [d["name"] for d in devices(65)]


def test_shrinking_removes_stale_slices_with_a_resource_version_precondition() -> None:
    current = apply([], plan(local(200), []))
    result = plan(local(10), current)
    assert len(result.deletes) == 3
    assert all(version == "1" for _, version in result.deletes)
    after = apply(current, result)
    assert len(after) == 1
    assert after[0]["spec"]["pool"]["resourceSliceCount"] == 1
    assert not plan(local(10), after)


def test_empty_pool_deletes_every_slice() -> None:
    current = apply([], plan(local(70), []))
    result = plan(local(0), current)
    assert len(result.deletes) == 2
    assert not result.creates
    assert not result.updates


def test_slices_of_an_older_generation_are_obsolete() -> None:
    current = apply([], plan(local(70), []))
    old = {**current[0], "metadata": {**current[0]["metadata"], "name": "leftover"}}
    old["spec"] = {**old["spec"], "pool": {**old["spec"]["pool"], "generation": 0}}
    result = plan(local(70), [*current, old])
    assert result.deletes == [("leftover", "1")]
    assert not result.updates
    assert not result.creates


def test_shared_pool_uses_per_device_node_selection() -> None:
    pool = Pool(shared_pool_name("cfg"), None, devices(3))
    (item,) = plan(pool, []).creates
    assert item["spec"]["perDeviceNodeSelection"] is True
    assert "nodeName" not in item["spec"]
    assert item["spec"]["pool"]["name"] == "cfg/shared"


def test_taint_time_added_by_the_api_server_is_no_change_and_is_kept() -> None:
    pool = local(2)
    pool.devices[0]["taints"] = [{"key": "akri.sh/offline", "effect": "NoSchedule"}]
    current = apply([], plan(pool, []))
    for item in current:
        for device in item["spec"]["devices"]:
            for taint in device.get("taints", []):
                taint["timeAdded"] = "2026-01-01T00:00:00Z"
    assert not plan(pool, current)
    pool.devices[1]["attributes"] = {"x": {"string": "y"}}
    (update,) = plan(pool, current).updates
    assert update["spec"]["devices"][0]["taints"][0]["timeAdded"] == "2026-01-01T00:00:00Z"


def test_labels_and_owner_go_on_every_slice() -> None:
    owner = {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "u"}
    result = plan(local(70, labels={"akri.sh/configuration": "cfg"}, owner=owner), [])
    for item in copy.deepcopy(result.creates):
        assert item["metadata"]["labels"] == {"akri.sh/configuration": "cfg"}
        assert item["metadata"]["ownerReferences"] == [owner]


def test_slice_names_are_distinct_dns_subdomains_per_pool() -> None:
    a = slice_name("cfg.node/shared", 0)
    b = slice_name("cfg/node/shared", 0)
    assert a != b
    long = slice_name("c" * 60 + "/node/" + "n" * 200, 12)
    assert len(long) <= 63
    assert long.endswith("-12")
