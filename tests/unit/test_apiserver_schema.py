"""CRD schema defaulting, pruning and validation."""

from __future__ import annotations

from typing import Any

import pytest

from akri.sim.apiserver.schema import Structural

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "pattern": "^[_A-Za-z][_A-Za-z0-9]*$"},
                "capacity": {"type": "integer", "minimum": 1, "default": 1},
                "shared": {"type": "boolean", "default": True},
                "mode": {"type": "string", "enum": ["Include", "Exclude"]},
                "ratio": {"type": "number", "maximum": 1, "exclusiveMaximum": True},
                "items": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                "props": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"value": {"type": "string"}, "ref": {"type": "string"}},
                        "oneOf": [{"required": ["value"]}, {"required": ["ref"]}],
                    },
                },
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "counts": {"type": "object", "additionalProperties": {"type": "integer"}},
                "flags": {"type": "array", "items": {"type": "boolean"}},
                "ports": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"protocol": {"type": "string", "default": "TCP"}},
                    },
                },
                "verbs": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"verb": {"type": "string", "default": "get"}},
                    },
                },
                "port": {"x-kubernetes-int-or-string": True},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "nested": {
                    "type": "object",
                    "default": {},
                    "properties": {"inner": {"type": "integer", "default": 5}},
                },
            },
        }
    },
}


STRUCTURAL = Structural.of(SCHEMA)


def fields(obj: dict[str, Any]) -> list[str]:
    return [field for field, _ in STRUCTURAL.validate(obj)]


def test_defaults_fill_absent_fields_recursively() -> None:
    obj = STRUCTURAL.apply_defaults({"spec": {"name": "a", "shared": False}})
    assert obj["spec"] == {"name": "a", "shared": False, "capacity": 1, "nested": {"inner": 5}}


def test_defaults_fill_map_values_and_list_items() -> None:
    spec = {"name": "a", "ports": {"http": {}}, "verbs": [{}, {"verb": "list"}]}
    obj = STRUCTURAL.apply_defaults({"spec": spec})
    assert obj["spec"]["ports"] == {"http": {"protocol": "TCP"}}
    assert obj["spec"]["verbs"] == [{"verb": "get"}, {"verb": "list"}]


def test_defaults_skip_absent_parents() -> None:
    assert STRUCTURAL.apply_defaults({"kind": "X"}) == {"kind": "X"}


def test_pruning_drops_undeclared_fields_only() -> None:
    obj = {
        "apiVersion": "v",
        "kind": "K",
        "metadata": {"name": "n"},
        "spec": {"name": "a", "bogus": 1, "free": {"x": 1}, "labels": {"a": "b"}},
        "extra": True,
    }
    dropped = STRUCTURAL.prune(obj)
    assert sorted(dropped) == ["extra", "spec.bogus"]
    assert obj["spec"] == {"name": "a", "free": {"x": 1}, "labels": {"a": "b"}}
    assert obj["metadata"] == {"name": "n"}


def test_valid_object_passes() -> None:
    assert (
        fields({"spec": {"name": "_ok1", "capacity": 3, "mode": "Include", "port": "http"}}) == []
    )


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.name"),
        ({"name": "1bad"}, "spec.name"),
        ({"name": "a", "capacity": 0}, "spec.capacity"),
        ({"name": "a", "capacity": 1.5}, "spec.capacity"),
        ({"name": "a", "capacity": True}, "spec.capacity"),
        ({"name": "a", "mode": "Maybe"}, "spec.mode"),
        ({"name": "a", "ratio": 1}, "spec.ratio"),
        ({"name": "a", "items": ["x", "y", "z"]}, "spec.items"),
        ({"name": "a", "items": [1]}, "spec.items[0]"),
        ({"name": "a", "labels": {"k": 1}}, "spec.labels.k"),
        ({"name": "a", "labels": {"k": None}}, "spec.labels.k"),
        ({"name": "a", "counts": {"c": True}}, "spec.counts.c"),
        ({"name": "a", "counts": {"c": 1.0}}, "spec.counts.c"),
        ({"name": "a", "flags": [True, 0]}, "spec.flags[1]"),
        ({"name": "a", "ports": {"http": {"protocol": 6}}}, "spec.ports.http.protocol"),
        ({"name": "a", "port": 1.5}, "spec.port"),
        ({"name": "a", "props": [{"value": "v", "ref": "r"}]}, "spec.props[0]"),
        ({"name": "a", "props": [{}]}, "spec.props[0]"),
        ({"name": None}, "spec.name"),
    ],
)
def test_violations_name_their_field(spec: dict[str, Any], field: str) -> None:
    assert field in fields({"spec": spec})


def test_nullable_allows_null() -> None:
    assert Structural.of({"type": "string", "nullable": True}).validate(None) == []
