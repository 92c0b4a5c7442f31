"""The Include/Exclude filter lists every filtering handler shares, with Akri's semantics."""

from __future__ import annotations

import operator
import re

import pytest

from akri.discovery_handlers.filters import FilterList, admits, found, same_text


def include(*items: str) -> FilterList[str]:
    return FilterList[str](items=list(items))


def exclude(*items: str) -> FilterList[str]:
    return FilterList[str](items=list(items), action="Exclude")


@pytest.mark.parametrize(
    ("filter_list", "values", "admitted"),
    [
        (None, ["a"], True),
        (None, None, True),
        (exclude(), None, True),
        (exclude(), [], True),
        (exclude(), ["a"], True),
        (include(), ["a"], False),
        (include("a"), None, False),
        (exclude("a"), None, False),
        (include("a"), [], False),
        (exclude("a"), [], True),
        (include("a", "b"), ["b"], True),
        (include("a"), ["x", "A"], True),
        (include("a"), ["x", "y"], False),
        (exclude("a", "b"), ["b"], False),
        (exclude("a"), ["x", "y"], True),
        (exclude("a"), ["x", "a"], False),
    ],
)
def test_akri_semantics(
    filter_list: FilterList[str] | None, values: list[str] | None, admitted: bool
) -> None:
    assert admits(filter_list, values, same_text) is admitted


def test_the_action_defaults_to_include() -> None:
    assert FilterList[int].model_validate({"items": [1]}).action == "Include"


def test_matchers() -> None:
    assert same_text("AB:cd", "ab:CD")
    assert not same_text("ab", "abc")
    assert found(re.compile("^printer-"), "printer-1")
    assert not found(re.compile("^printer-"), "my-printer-1")
    assert admits(FilterList[int](items=[80]), [80], operator.eq)
