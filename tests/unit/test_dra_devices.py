"""Instances as DRA devices and Configurations as DeviceClasses (docs/design.md §8a)."""

from __future__ import annotations

from typing import Any

import pytest

from akri.api import Configuration, Instance
from akri.dra.devices import (
    MAX_ATTRIBUTES_AND_CAPACITIES,
    OFFLINE_TAINT,
    OVER_CAPACITY_TAINT,
    class_selector,
    device_class,
    device_class_name,
    held_slots,
    instance_devices,
    instance_selector,
    offered_slots,
    property_attribute_problem,
    published_devices,
)
from tests.support import selected_nodes


def instance(
    name: str = "cfg-8120fe",
    capacity: int = 2,
    nodes: tuple[str, ...] = ("n",),
    properties: dict[str, str] | None = None,
) -> Instance:
    return Instance.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "configurationName": "cfg",
                "capacity": capacity,
                "shared": True,
                "nodes": list(nodes),
                "brokerProperties": properties or {},
            },
        }
    )


def attributes(device: dict[str, Any]) -> dict[str, str]:
    return {k: v["string"] for k, v in device["attributes"].items()}


def test_unique_devices_give_one_shared_device_with_slots_capacity() -> None:
    (device,) = instance_devices(
        instance(capacity=3), handler="debugEcho", unique=True, per_device_nodes=False
    ).devices
    assert device["name"] == "cfg-8120fe"
    assert device["allowMultipleAllocations"] is True
    assert device["capacity"] == {
        "slots": {
            "value": "3",
            "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}},
        }
    }
    assert attributes(device) == {
        "configuration": "cfg",
        "handler": "debugEcho",
        "instance": "cfg-8120fe",
    }
    assert "nodeSelector" not in device
    assert "taints" not in device


def test_non_unique_devices_give_one_single_allocation_device_per_slot() -> None:
    devices = instance_devices(
        instance(capacity=3), handler="udev", unique=False, per_device_nodes=False
    ).devices
    assert [d["name"] for d in devices] == ["cfg-8120fe-0", "cfg-8120fe-1", "cfg-8120fe-2"]
    for device in devices:
        assert "allowMultipleAllocations" not in device
        assert "capacity" not in device
        assert attributes(device)["instance"] == "cfg-8120fe"


@pytest.mark.parametrize("unique", [True, False])
def test_shared_pool_devices_select_the_instance_nodes(unique: bool) -> None:
    """By the hostname label, in one term: kube-apiserver refuses a `metadata.name` field
    requirement with two values (422), and the scheduler allocates nothing from a device
    whose selector has two terms (both seen on a real 1.36 cluster)."""
    devices = instance_devices(
        instance(nodes=("n", "m")), handler="h", unique=unique, per_device_nodes=True
    ).devices
    assert devices
    for device in devices:
        assert device["nodeSelector"] == {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["m", "n"]}
                    ]
                }
            ]
        }


def test_shared_pool_devices_select_nodes_by_their_hostname_label() -> None:
    """A node whose kubelet was given another hostname is selected by that label."""
    (device,) = instance_devices(
        instance(nodes=("m", "n")),
        handler="h",
        unique=True,
        per_device_nodes=True,
        hostnames={"n": "n.example.com"},
    ).devices
    assert selected_nodes(device) == ["m", "n.example.com"]


def test_shared_instance_seen_by_no_node_has_no_device() -> None:
    result = instance_devices(instance(nodes=()), handler="h", unique=True, per_device_nodes=True)
    assert result.devices == []


def test_offline_device_is_tainted_no_schedule() -> None:
    (device,) = instance_devices(
        instance(), handler="h", unique=True, per_device_nodes=False, offline=True
    ).devices
    assert device["taints"] == [{"key": OFFLINE_TAINT, "effect": "NoSchedule"}]


def reported_offline(found: Instance, *nodes: str) -> Instance:
    rows = [{"node": n, "problems": [{"type": "DeviceOffline", "message": "m"}]} for n in nodes]
    rows.append({"node": "x", "problems": [{"type": "PluginUnavailable", "message": "m"}]})
    return Instance.from_wire({**found.to_wire(), "status": {"nodes": rows}})


CONFIGURATION = Configuration.from_wire(
    {
        "apiVersion": "akri.sh/v0",
        "kind": "Configuration",
        "metadata": {"name": "cfg", "namespace": "default"},
        "spec": {"discoveryHandler": {"name": "debugEcho"}, "capacity": 2},
    }
)


@pytest.mark.parametrize(
    ("offline", "selected", "tainted"),
    [
        ((), ["m", "n"], False),
        (("n",), ["m"], False),  # the others still see it: n just stops offering it
        (("m", "n"), ["m", "n"], True),  # nobody sees it: kept, but nothing new allocated
        (("gone",), ["m", "n"], False),  # a row of a node no longer in nodes counts for nothing
    ],
)
def test_devices_reported_offline_leave_those_nodes_or_are_tainted(
    offline: tuple[str, ...], selected: list[str], tainted: bool
) -> None:
    found = reported_offline(instance(nodes=("m", "n")), *offline)
    (device,) = published_devices(found, CONFIGURATION, per_device_nodes=True).devices
    assert selected_nodes(device) == selected
    assert ("taints" in device) is tainted


def test_broker_properties_become_string_attributes_where_valid() -> None:
    properties = {
        "DEBUG_ECHO_DESCRIPTION": "foo0",
        "bad-name": "x",
        "X" * 33: "too long a name",
        "LONG_VALUE": "v" * 65,
        "instance": "clash with our own attribute",
        "OK_64": "v" * 64,
    }
    result = instance_devices(
        instance(properties=properties), handler="h", unique=True, per_device_nodes=False
    )
    got = attributes(result.devices[0])
    assert got["DEBUG_ECHO_DESCRIPTION"] == "foo0"
    assert got["OK_64"] == "v" * 64
    assert got["instance"] == "cfg-8120fe"
    assert not {"bad-name", "X" * 33, "LONG_VALUE"} & got.keys()
    assert len(result.skipped) == 4
    assert any("bad-name" in s for s in result.skipped)


def test_attributes_and_capacities_stay_within_the_per_device_limit() -> None:
    properties = {f"P{i:02}": "x" for i in range(40)}
    result = instance_devices(
        instance(properties=properties), handler="h", unique=True, per_device_nodes=False
    )
    device = result.devices[0]
    assert len(device["attributes"]) + len(device["capacity"]) == MAX_ATTRIBUTES_AND_CAPACITIES
    assert len(result.skipped) == 40 - (MAX_ATTRIBUTES_AND_CAPACITIES - 4)
    assert "P00" in device["attributes"]  # the first names in order are kept


@pytest.mark.parametrize(
    ("name", "value", "ok"),
    [
        ("A", "x", True),
        ("_a1", "", True),
        ("1a", "x", False),
        ("a.b", "x", False),
        ("a", "x" * 65, False),
    ],
)
def test_property_attribute_rules(name: str, value: str, ok: bool) -> None:
    assert (property_attribute_problem(name, value) is None) is ok


def test_device_names_are_dns_labels_even_for_odd_instance_names() -> None:
    (device,) = instance_devices(
        instance(name="My.Cfg-8120fe"), handler="h", unique=True, per_device_nodes=False
    ).devices
    assert device["name"].islower()
    assert "." not in device["name"]


def test_device_class_selects_the_configuration_and_backs_its_extended_resource() -> None:
    configuration = Configuration.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Configuration",
            "metadata": {"name": "cam", "namespace": "default"},
            "spec": {"discoveryHandler": {"name": "onvif"}},
        }
    )
    cls = device_class(configuration, {"akri.sh/configuration": "cam"})
    assert cls["metadata"] == {"name": "cam.akri.sh", "labels": {"akri.sh/configuration": "cam"}}
    assert device_class_name("cam") == "cam.akri.sh"
    assert cls["spec"] == {
        "selectors": [
            {
                "cel": {
                    "expression": 'device.driver == "akri.sh" && '
                    'device.attributes["akri.sh"].configuration == "cam"'
                }
            }
        ],
        "extendedResourceName": "akri.sh/cam",
    }
    assert class_selector("cam") in cls["spec"]["selectors"][0]["cel"]["expression"]
    assert (
        instance_selector("cam-8120fe") == 'device.attributes["akri.sh"].instance == "cam-8120fe"'
    )


@pytest.mark.parametrize(
    ("capacity", "allocated", "offered"),
    [
        (3, [], [0, 1, 2]),
        (3, ["i-1"], [0, 1, 2]),
        # capacity 3 -> 2 under slot 2: it stays, one free slot has room
        (2, ["i-2"], [0, 2]),
        (2, ["i-0", "i-2"], [0, 2]),
        (2, ["i-1", "i-2", "i-3"], [1, 2, 3]),
        (1, ["i-2", "i-3"], [2, 3]),
        # other Instances' devices and names that are no slot id count for nothing
        (2, ["j-2", "i-x", "i-02"], [0, 1]),
    ],
)
def test_offered_slots_never_leave_room_past_the_capacity(
    capacity: int, allocated: list[str], offered: list[int]
) -> None:
    assert offered_slots(capacity, held_slots("i", allocated)) == offered


def test_slots_held_past_the_capacity_are_tainted_until_the_claims_fit() -> None:
    """A slot freed while more are held than the capacity is not free for the allocator in
    the slice it has: every slot is tainted until the held ones fit."""
    found = instance(capacity=2)
    name = found.metadata.name
    held = [f"{name}-0", f"{name}-1", f"{name}-2"]

    def devices(allocated: list[str]) -> dict[str, Any]:
        result = instance_devices(
            found, handler="h", unique=False, per_device_nodes=False, allocated=allocated
        )
        return {str(d["name"]): d for d in result.devices}

    over = devices(held)
    assert sorted(over) == held
    assert all(
        d["taints"] == [{"key": OVER_CAPACITY_TAINT, "effect": "NoSchedule"}] for d in over.values()
    )
    fits = devices(held[1:])
    assert sorted(fits) == held[1:]
    assert not any("taints" in d for d in fits.values())
