"""debugEcho's pure parts: details, the availability file format, the device list."""

from __future__ import annotations

import pytest

from akri.api import ConditionType
from akri.discovery.model import Device, InvalidDetails
from akri.discovery_handlers.debug_echo import (
    PROPERTY,
    Availability,
    devices,
    parse_availability,
    parse_details,
)
from akri.settings import parse_bool


@pytest.mark.parametrize(
    ("details", "descriptions"),
    [
        ("descriptions: [foo0, foo1]", ["foo0", "foo1"]),
        ("descriptions:\n- a b\n- 'c: d'\n", ["a b", "c: d"]),
        ("descriptions: []", []),
    ],
)
def test_good_details(details: str, descriptions: list[str]) -> None:
    assert parse_details(details).descriptions == descriptions


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        ("", "descriptions: Field required"),
        ("[foo0]", "must be a mapping"),
        ("descriptions: foo0", "descriptions: Input should be a valid list"),
        ("descriptions: [1]", "descriptions.0: Input should be a valid string"),
        ("descriptions: ['']", "descriptions.0: String should have at least 1 character"),
        ("descriptons: [foo0]", "descriptions: Field required"),
        ("descriptions: [a]\nextra: 1", "extra: Extra inputs are not permitted"),
        ("descriptions: [a", "not valid YAML"),
    ],
)
def test_bad_details_name_the_problem(details: str, reason: str) -> None:
    with pytest.raises(InvalidDetails, match="debugEcho") as caught:
        parse_details(details)
    assert reason in str(caught.value)
    assert caught.value.status.condition is ConditionType.INVALID_DETAILS


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", Availability()),
        ("OFFLINE", Availability(everything=True)),
        ("  OFFLINE  \n\n", Availability(everything=True)),
        ("foo0\n foo1 \n", Availability(descriptions=frozenset({"foo0", "foo1"}))),
        ("foo0\nOFFLINE\n", Availability(True, frozenset({"foo0"}))),
        ("online", Availability(descriptions=frozenset({"online"}))),
    ],
)
def test_availability_file_format(text: str, expected: Availability) -> None:
    assert parse_availability(text) == expected


def test_one_device_per_distinct_online_description_in_order() -> None:
    offline = Availability(descriptions=frozenset({"b"}))
    assert devices(["c", "a", "b", "c"], offline) == [
        Device("c", {PROPERTY: "c"}),
        Device("a", {PROPERTY: "a"}),
    ]
    assert devices(["a"], Availability(everything=True)) == []
    assert devices(["a"], Availability()) == [Device("a", {PROPERTY: "a"})]


def test_availabilities_combine() -> None:
    left = Availability(descriptions=frozenset({"a"}))
    right = Availability(descriptions=frozenset({"b"}))
    assert left | right == Availability(False, frozenset({"a", "b"}))
    assert (left | Availability(everything=True)).is_offline("z")


@pytest.mark.parametrize(("value", "expected"), [("true", True), ("False", False)])
def test_boolean_flags(value: str, expected: bool) -> None:
    assert parse_bool("X", value) is expected


def test_boolean_flags_are_not_guessed() -> None:
    with pytest.raises(ValueError, match="X must be true or false, got 'yes'"):
        parse_bool("X", "yes")
