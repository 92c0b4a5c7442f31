"""Label and field selector parsing and matching."""

from __future__ import annotations

import pytest

from akri.sim.apiserver.errors import ApiError
from akri.sim.apiserver.selectors import FieldSelector, LabelSelector, field_path

LABELS = {"app": "web", "tier": "front", "akri.sh/instance": "cfg-8120fe"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app=db", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web, db)", True),
        ("app notin (web)", False),
        ("missing notin (web)", True),
        ("tier", True),
        ("!tier", False),
        ("!missing", True),
        ("akri.sh/instance=cfg-8120fe,app in (web),!missing", True),
        ("akri.sh/instance=cfg-8120fe,app=db", False),
    ],
)
def test_label_selector_matches(selector: str, expected: bool) -> None:
    assert LabelSelector.parse(selector).matches(LABELS) is expected


def test_label_selector_on_unlabelled_object() -> None:
    assert LabelSelector.parse("!app").matches(None)
    assert not LabelSelector.parse("app").matches(None)


def test_numeric_comparisons() -> None:
    assert LabelSelector.parse("gen>2").matches({"gen": "3"})
    assert not LabelSelector.parse("gen<2").matches({"gen": "3"})
    assert not LabelSelector.parse("gen>2").matches({"gen": "x"})


@pytest.mark.parametrize("selector", ["app in (web", "Bad Key=x", "app=has space", "gen>x"])
def test_malformed_label_selectors_are_400(selector: str) -> None:
    with pytest.raises(ApiError) as caught:
        LabelSelector.parse(selector)
    assert caught.value.code == 400


POD = {
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"nodeName": "node-a", "hostNetwork": False},
    "status": {"phase": "Running"},
}
FIELDS = {
    "metadata.name": field_path("metadata.name"),
    "spec.nodeName": field_path("spec.nodeName"),
    "spec.hostNetwork": field_path("spec.hostNetwork"),
    "status.phase": field_path("status.phase"),
    "status.podIP": field_path("status.podIP"),
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("spec.nodeName=node-a", True),
        ("spec.nodeName==node-a", True),
        ("spec.nodeName!=node-a", False),
        ("status.phase!=Succeeded,status.phase!=Failed", True),
        ("spec.hostNetwork=false", True),
        ("status.podIP=", True),  # a missing field compares as the empty string
        ("metadata.name=p,spec.nodeName=node-b", False),
    ],
)
def test_field_selector_matches(selector: str, expected: bool) -> None:
    assert FieldSelector.parse(selector).matches(POD, FIELDS) is expected


def test_field_selector_escapes() -> None:
    parsed = FieldSelector.parse(r"metadata.name=a\,b")
    assert parsed.matches({"metadata": {"name": "a,b"}}, FIELDS)


def test_unsupported_field_is_400() -> None:
    with pytest.raises(ApiError) as caught:
        FieldSelector.parse("spec.other=x").check_supported(FIELDS, "Pod")
    assert caught.value.code == 400


def test_field_selector_without_operator_is_400() -> None:
    with pytest.raises(ApiError):
        FieldSelector.parse("spec.nodeName")
