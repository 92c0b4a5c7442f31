"""The simulated scheduler's DRA allocator, rule by rule, on the devices akri-py publishes."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from akri.api import Configuration, Instance
from akri.dra.devices import OFFLINE_TAINT, device_class, instance_devices, instance_selector
from akri.dra.slices import Pool, local_pool_name, plan, shared_pool_name
from akri.sim.dra_allocation import AllocationError, InUse, allocate, candidates, consumption

JSON = dict[str, Any]


def node(name: str) -> JSON:
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}


def classes() -> dict[str, JSON]:
    configuration = Configuration.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Configuration",
            "metadata": {"name": "cfg", "namespace": "default"},
            "spec": {"discoveryHandler": {"name": "debugEcho"}},
        }
    )
    cls = device_class(configuration, {})
    return {cls["metadata"]["name"]: cls}


def instance(name: str, nodes: list[str], capacity: int = 2) -> Instance:
    return Instance.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"configurationName": "cfg", "capacity": capacity, "nodes": nodes},
        }
    )


def shared_slices(unique: bool, capacity: int = 2, offline: tuple[str, ...] = ()) -> list[JSON]:
    devices = []
    for name in ("cfg-a", "cfg-b"):
        devices += instance_devices(
            instance(name, ["n", "m"], capacity),
            handler="h",
            unique=unique,
            per_device_nodes=True,
            offline=name in offline,
        ).devices
    return plan(Pool(shared_pool_name("cfg"), None, devices), []).creates


def claim(count: int, *, selectors: list[JSON] | None = None, **extra: Any) -> JSON:
    exactly = {"deviceClassName": "cfg.akri.sh", "allocationMode": "ExactCount", "count": count}
    if selectors:
        exactly["selectors"] = selectors
    exactly.update(extra)
    return {"spec": {"devices": {"requests": [{"name": "r", "exactly": exactly}]}}}


def claimed(allocation: Any) -> JSON:
    return {"status": {"allocation": allocation.status("now")}}


def devices_of(allocation: Any) -> list[str]:
    return sorted(r["device"] for r in allocation.results)


def test_worked_example_unique_devices() -> None:
    """docs/design.md §5.4: two devices of capacity 2; N asks 2, M asks A once, 3 never fits."""
    slices = shared_slices(unique=True)
    n, m = candidates(slices, node("n")), candidates(slices, node("m"))
    in_use = InUse()
    p1 = allocate(claim(2), classes(), n, in_use)
    assert p1 is not None
    assert devices_of(p1) == ["cfg-a", "cfg-b"]  # two distinct devices, never one twice
    assert all(r["consumedCapacity"] == {"slots": "1"} and r["shareID"] for r in p1.results)
    by_instance = [{"cel": {"expression": instance_selector("cfg-a")}}]
    p2 = allocate(claim(1, selectors=by_instance), classes(), m, InUse.of([claimed(p1)]))
    assert p2 is not None
    assert devices_of(p2) == ["cfg-a"]
    full = InUse.of([claimed(p1), claimed(p2)])
    assert allocate(claim(1, selectors=by_instance), classes(), n, full) is None  # A is full
    assert allocate(claim(1), classes(), n, full) is not None  # B has a slot
    assert allocate(claim(3), classes(), n, InUse()) is None  # three distinct never fit


def test_worked_example_slot_devices() -> None:
    """uniqueDevices false: every slot is a device, one request may take slots of one device."""
    slices = shared_slices(unique=False)
    n = candidates(slices, node("n"))
    p1 = allocate(claim(3), classes(), n, InUse())
    assert p1 is not None
    assert devices_of(p1) == ["cfg-a-0", "cfg-a-1", "cfg-b-0"]
    used = InUse.of([claimed(p1)])
    last = allocate(claim(1), classes(), n, used)
    assert last is not None
    assert devices_of(last) == ["cfg-b-1"]
    assert allocate(claim(1), classes(), n, InUse.of([claimed(p1), claimed(last)])) is None


def test_capacity_is_never_exceeded_across_nodes() -> None:
    slices = shared_slices(unique=True, capacity=2)
    held: list[JSON] = []
    for name in ("n", "m", "n", "m"):
        allocation = allocate(claim(1), classes(), candidates(slices, node(name)), InUse.of(held))
        assert allocation is not None
        held.append(claimed(allocation))
    assert allocate(claim(1), classes(), candidates(slices, node("m")), InUse.of(held)) is None


def test_devices_reach_only_their_nodes() -> None:
    local = plan(
        Pool(
            local_pool_name("cfg", "n"),
            "n",
            instance_devices(
                instance("cfg-l", ["n"]), handler="h", unique=True, per_device_nodes=False
            ).devices,
        ),
        [],
    ).creates
    assert [c.device["name"] for c in candidates(local, node("n"))] == ["cfg-l"]
    assert candidates(local, node("m")) == []
    allocation = allocate(claim(1), classes(), candidates(local, node("n")), InUse())
    assert allocation is not None
    assert allocation.node_selector == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
        ]
    }
    assert candidates(shared_slices(True), node("x")) == []


def hostname_term(*nodes: str) -> JSON:
    return {"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}


def test_shared_device_seen_by_one_node_is_allocated_there_only() -> None:
    devices = instance_devices(
        instance("cfg-a", ["m"]), handler="h", unique=True, per_device_nodes=True
    ).devices
    slices = plan(Pool(shared_pool_name("cfg"), None, devices), []).creates
    assert candidates(slices, node("n")) == []
    allocation = allocate(claim(1), classes(), candidates(slices, node("m")), InUse())
    assert allocation is not None
    assert allocation.node_selector == {
        "nodeSelectorTerms": [{"matchExpressions": [hostname_term("m")]}]
    }


def test_an_allocation_of_several_devices_is_where_all_of_them_are() -> None:
    """createNodeSelector: the requirements of every device's one term, ANDed in one term,
    each once; a node-local device pins the allocation to its node."""
    devices = []
    for name, nodes in (("cfg-a", ["m", "n"]), ("cfg-b", ["n", "o"]), ("cfg-c", ["m", "n"])):
        devices += instance_devices(
            instance(name, nodes), handler="h", unique=True, per_device_nodes=True
        ).devices
    slices = plan(Pool(shared_pool_name("cfg"), None, devices), []).creates
    allocation = allocate(claim(3), classes(), candidates(slices, node("n")), InUse())
    assert allocation is not None
    assert allocation.node_selector == {
        "nodeSelectorTerms": [
            {"matchExpressions": [hostname_term("m", "n"), hostname_term("n", "o")]}
        ]
    }
    local = instance_devices(
        instance("cfg-l", ["n"]), handler="h", unique=True, per_device_nodes=False
    ).devices
    slices += plan(Pool(local_pool_name("cfg", "n"), "n", local), []).creates
    pinned = allocate(claim(4), classes(), candidates(slices, node("n")), InUse())
    assert pinned is not None
    assert pinned.node_selector == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
        ]
    }


def test_a_device_selector_of_several_terms_cannot_be_allocated() -> None:
    """What a real 1.36 scheduler answers for such a device (the API server accepts it): the
    pod stays Pending with "unsupported ResourceSlice.NodeSelector with 2 terms"."""
    (slice_,) = shared_slices(unique=True)
    terms = [{"matchExpressions": [hostname_term(n)]} for n in ("m", "n")]
    for device in slice_["spec"]["devices"]:
        device["nodeSelector"] = {"nodeSelectorTerms": terms}
    reached = candidates([slice_], node("n"))
    assert reached  # either term reaches the node: terms are ORed
    with pytest.raises(
        AllocationError, match=r"unsupported ResourceSlice\.NodeSelector with 2 terms"
    ):
        allocate(claim(1), classes(), reached, InUse())


def test_incomplete_or_outdated_pools_are_not_used() -> None:
    slices = shared_slices(unique=True)
    incomplete = [
        {**s, "spec": {**s["spec"], "pool": {**s["spec"]["pool"], "resourceSliceCount": 2}}}
        for s in slices
    ]
    assert candidates(incomplete, node("n")) == []
    older = [
        {
            **s,
            "spec": {**s["spec"], "pool": {**s["spec"]["pool"], "generation": 0}},
            "metadata": {"name": "old"},
        }
        for s in slices
    ]
    assert len(candidates([*slices, *older], node("n"))) == 2


def test_tainted_devices_are_not_allocated_unless_tolerated() -> None:
    slices = shared_slices(unique=True, offline=("cfg-a",))
    n = candidates(slices, node("n"))
    allocation = allocate(claim(1), classes(), n, InUse())
    assert allocation is not None
    assert devices_of(allocation) == ["cfg-b"]
    assert allocate(claim(2), classes(), n, InUse()) is None
    tolerations = [{"key": OFFLINE_TAINT, "operator": "Exists"}]
    assert allocate(claim(2, tolerations=tolerations), classes(), n, InUse()) is not None


def test_all_mode_takes_every_free_device() -> None:
    n = candidates(shared_slices(unique=False), node("n"))
    allocation = allocate(
        {
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "r",
                            "exactly": {"deviceClassName": "cfg.akri.sh", "allocationMode": "All"},
                        }
                    ]
                }
            }
        },
        classes(),
        n,
        InUse(),
    )
    assert allocation is not None
    assert len(allocation.results) == 4


def test_distinct_and_match_attribute_constraints() -> None:
    n = candidates(shared_slices(unique=False), node("n"))
    distinct = claim(2)
    distinct["spec"]["devices"]["constraints"] = [{"distinctAttribute": "akri.sh/instance"}]
    allocation = allocate(distinct, classes(), n, InUse())
    assert allocation is not None
    assert devices_of(allocation) == ["cfg-a-0", "cfg-b-0"]  # backtracked past cfg-a-1
    same = claim(2)
    same["spec"]["devices"]["constraints"] = [{"matchAttribute": "akri.sh/instance"}]
    allocation = allocate(same, classes(), n, InUse())
    assert allocation is not None
    assert devices_of(allocation) == ["cfg-a-0", "cfg-a-1"]
    three = claim(3)
    three["spec"]["devices"]["constraints"] = [{"distinctAttribute": "akri.sh/instance"}]
    assert allocate(three, classes(), n, InUse()) is None


def test_capacity_requests_follow_the_policy() -> None:
    device = {
        "capacity": {
            "slots": {
                "value": "4",
                "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "2"}},
            }
        }
    }
    assert consumption(device, {}) == {"slots": Decimal(1)}
    assert consumption(device, {"slots": "2"}) == {
        "slots": Decimal(3)
    }  # rounded up to a valid step
    assert consumption(device, {"slots": "5"}) == {"slots": Decimal(5)}
    no_policy = {"capacity": {"slots": {"value": "4"}}}
    assert consumption(no_policy, {}) == {"slots": Decimal(4)}  # no policy: all of it
    valid = {"capacity": {"s": {"value": "4", "requestPolicy": {"validValues": ["1", "2"]}}}}
    assert consumption(valid, {"s": "3"}) is None
    slices = shared_slices(unique=True)
    n = candidates(slices, node("n"))
    both = allocate(claim(1, capacity={"requests": {"slots": "2"}}), classes(), n, InUse())
    assert both is not None
    assert both.results[0]["consumedCapacity"] == {"slots": "2"}


def test_bad_selectors_and_classes_are_errors() -> None:
    n = candidates(shared_slices(unique=True), node("n"))
    with pytest.raises(AllocationError, match="CEL"):
        allocate(
            claim(
                1, selectors=[{"cel": {"expression": 'device.attributes["akri.sh"].nope == "x"'}}]
            ),
            classes(),
            n,
            InUse(),
        )
    missing = claim(1)
    missing["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"] = "none"
    with pytest.raises(AllocationError, match="does not exist"):
        allocate(missing, classes(), n, InUse())
