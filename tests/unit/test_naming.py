"""Names other components and nodes depend on (docs/design.md §4)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from akri import naming

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@pytest.mark.parametrize(("device_id", "expected"), [("foo0", "8120fe"), ("foo1", "a19705")])
def test_shared_device_digest_matches_akri_vectors(device_id: str, expected: str) -> None:
    assert naming.device_digest(device_id) == expected
    assert naming.instance_name("cfg", device_id) == f"cfg-{expected}"


def test_local_device_digest_appends_node_without_separator() -> None:
    assert naming.device_digest("foo0", "node-a") == naming.digest("foo0node-a")
    assert naming.instance_name("cfg", "foo0", "node-a") != naming.instance_name("cfg", "foo0")
    assert naming.instance_name("cfg", "foo0", "node-a") != naming.instance_name(
        "cfg", "foo0", "node-b"
    )


def test_resource_and_virtual_device_names() -> None:
    assert naming.resource_name("cfg-8120fe") == "akri.sh/cfg-8120fe"
    assert naming.slot_ids("cfg-8120fe", 3) == ["cfg-8120fe-0", "cfg-8120fe-1", "cfg-8120fe-2"]
    assert naming.configuration_level_device_id("cfg", 4) == "cfg-4"


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("cfg-8120fe-0", 0),
        ("cfg-8120fe-12", 12),
        ("cfg-8120fe-012", None),
        ("cfg-8120fe-", None),
        ("cfg-8120fe-x", None),
        ("other-8120fe-1", None),
        ("cfg-8120fe--1", None),
        ("cfg-8120fe-\u0663", None),  # a digit, but not ASCII: slot_id never writes it
        ("cfg-8120fe0-1", None),
        ("cfg-8120f", None),
    ],
)
def test_slot_index_accepts_only_canonical_ids(device: str, expected: int | None) -> None:
    assert naming.slot_index("cfg-8120fe", device) == expected


@given(st.integers(min_value=0, max_value=10_000))
def test_slot_and_configuration_level_ids_round_trip(index: int) -> None:
    assert naming.slot_index("cfg-abcdef", naming.slot_id("cfg-abcdef", index)) == index
    assert (
        naming.configuration_level_device_index(
            "cfg", naming.configuration_level_device_id("cfg", index)
        )
        == index
    )


def test_property_env_name_is_suffixed_with_upper_case_digest() -> None:
    assert naming.property_env_name("DEBUG_ECHO_DESCRIPTION", "cfg-8120fe") == (
        "DEBUG_ECHO_DESCRIPTION_8120FE"
    )


@pytest.mark.parametrize(
    ("name", "valid"),
    [("UDEV_DEVNODE", True), ("_x1", True), ("1X", False), ("A-B", False), ("", False)],
)
def test_env_name_validity(name: str, valid: bool) -> None:
    assert naming.is_env_name(name) is valid


def test_configuration_name_limits_follow_the_instance_resource_name() -> None:
    assert naming.configuration_name_problem("a" * 56) is None
    problem = naming.configuration_name_problem("a" * 57)
    assert problem is not None
    assert "63" in problem
    assert naming.configuration_name_problem("bad_") is not None


def test_broker_and_service_names() -> None:
    assert naming.broker_pod_name("cfg-8120fe", "node-0", shared=True) == "cfg-8120fe-node-0-pod"
    assert naming.broker_pod_name("cfg-8120fe", "node-0", shared=False) == "cfg-8120fe-pod"
    assert naming.broker_job_name("cfg-8120fe", 3) == "cfg-8120fe-3-job"
    assert naming.instance_service_name("cfg-8120fe") == "cfg-8120fe-svc"
    assert naming.configuration_service_name("cfg") == "cfg-svc"


def test_long_broker_names_are_truncated_with_a_digest_and_stay_distinct() -> None:
    first = naming.broker_pod_name("c" * 50 + "-8120fe", "node-with-a-long-name-1", shared=True)
    second = naming.broker_pod_name("c" * 50 + "-8120fe", "node-with-a-long-name-2", shared=True)
    assert len(first) <= naming.MAX_DNS_LABEL
    assert DNS_LABEL.match(first)
    assert first != second


@given(st.text(min_size=1, max_size=300))
def test_dns_label_is_always_valid_and_injective_on_changed_names(name: str) -> None:
    label = naming.dns_label(name)
    assert DNS_LABEL.match(label), label
    assert len(label) <= naming.MAX_DNS_LABEL
    if label != name:
        assert label.endswith(naming.digest(name))
