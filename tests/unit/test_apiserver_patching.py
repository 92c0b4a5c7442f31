"""Merge, JSON and strategic merge patches."""

from __future__ import annotations

from typing import Any

import pytest

from akri.sim.apiserver.errors import ApiError
from akri.sim.apiserver.patching import json_patch, merge_patch, strategic_merge_patch


def test_merge_patch_merges_objects_replaces_lists_and_deletes_nulls() -> None:
    target: dict[str, Any] = {"spec": {"a": 1, "b": {"c": 2}, "list": [1, 2]}, "keep": True}
    patch = {"spec": {"a": None, "b": {"d": 3}, "list": [3]}}
    assert merge_patch(target, patch) == {
        "spec": {"b": {"c": 2, "d": 3}, "list": [3]},
        "keep": True,
    }
    assert target["spec"]["a"] == 1  # the target is not modified


def test_json_patch_applies_and_tests() -> None:
    target = {"spec": {"nodes": ["a"]}, "metadata": {"resourceVersion": "7"}}
    patched = json_patch(
        target,
        [
            {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
            {"op": "add", "path": "/spec/nodes/-", "value": "b"},
            {"op": "add", "path": "/spec/count", "value": 1},
        ],
    )
    assert patched["spec"] == {"nodes": ["a", "b"], "count": 1}


@pytest.mark.parametrize(
    ("operations", "code"),
    [
        ([{"op": "test", "path": "/a", "value": 2}], 422),
        ([{"op": "remove", "path": "/missing"}], 422),
        ({"op": "add", "path": "/a", "value": 1}, 400),  # not an array
        ([{"op": "frobnicate", "path": "/a"}], 400),
    ],
)
def test_json_patch_failures(operations: Any, code: int) -> None:
    with pytest.raises(ApiError) as caught:
        json_patch({"a": 1}, operations)
    assert caught.value.code == code


POD = {
    "metadata": {"finalizers": ["a"]},
    "spec": {
        "containers": [
            {"name": "main", "image": "x", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "y", "ports": [{"containerPort": 80}]},
        ],
        "tolerations": [{"key": "t"}],
    },
    "status": {"conditions": [{"type": "Ready", "status": "False"}]},
}


def test_strategic_merge_merges_lists_by_key() -> None:
    patch = {
        "spec": {
            "containers": [
                {"name": "main", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "9"}]},
                {"name": "new", "image": "z"},
            ]
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }
    result = strategic_merge_patch(POD, patch)
    containers = result["spec"]["containers"]
    # A real server's order (checked on kube-apiserver 1.36): the patch's items in its order,
    # a new one ahead of the items only the server had, a known one at its old place.
    assert [c["name"] for c in containers] == ["main", "new", "side"]
    assert containers[0]["env"] == [{"name": "B", "value": "2"}, {"name": "A", "value": "9"}]
    assert containers[0]["image"] == "x"
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "True"}]


def test_strategic_merge_replaces_lists_without_key() -> None:
    result = strategic_merge_patch(POD, {"spec": {"tolerations": [{"key": "u"}]}})
    assert result["spec"]["tolerations"] == [{"key": "u"}]


def test_strategic_merge_directives() -> None:
    patch = {
        "metadata": {"finalizers": ["b"], "$deleteFromPrimitiveList/finalizers": ["a"]},
        "spec": {
            "containers": [{"name": "side", "$patch": "delete"}],
            "$setElementOrder/containers": [{"name": "main"}],
        },
    }
    result = strategic_merge_patch(POD, patch)
    assert [c["name"] for c in result["spec"]["containers"]] == ["main"]
    assert result["metadata"]["finalizers"] == ["b"]
    replaced = strategic_merge_patch(POD, {"spec": {"$patch": "replace", "containers": []}})
    assert replaced["spec"] == {"containers": []}


def test_strategic_merge_service_ports_key_on_port() -> None:
    service = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    result = strategic_merge_patch(service, {"spec": {"ports": [{"port": 80, "targetPort": 8080}]}})
    assert result["spec"]["ports"] == [
        {"port": 80, "name": "http", "targetPort": 8080},
        {"port": 443, "name": "https"},
    ]


def test_strategic_merge_retain_keys() -> None:
    target = {"strategy": {"type": "A", "rollingUpdate": {"max": 1}}}
    patch = {"strategy": {"$retainKeys": ["type"], "type": "B"}}
    assert strategic_merge_patch(target, patch) == {"strategy": {"type": "B"}}


def test_strategic_merge_puts_new_set_items_first() -> None:
    """Finalizers [x, y] patched with [z] become [z, x, y] on kube-apiserver 1.36."""
    target = {"metadata": {"finalizers": ["a.io/x", "a.io/y"]}}
    added = strategic_merge_patch(target, {"metadata": {"finalizers": ["a.io/z"]}})
    assert added["metadata"]["finalizers"] == ["a.io/z", "a.io/x", "a.io/y"]
    known = strategic_merge_patch(target, {"metadata": {"finalizers": ["a.io/y", "a.io/z"]}})
    assert known["metadata"]["finalizers"] == ["a.io/x", "a.io/y", "a.io/z"]
