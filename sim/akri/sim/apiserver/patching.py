"""The three PATCH flavours a client can send: merge, JSON and strategic merge.

Pure logic on JSON documents. JSON patch (RFC 6902) comes from the `jsonpatch` library; merge
patch (RFC 7386) is a few lines. Strategic merge is approximated the way kubectl needs it for
built-in kinds: lists with a known merge key merge element-wise, the patch directives kubectl
emits are understood, everything else behaves like a merge patch.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from akri.sim.apiserver.errors import ApiError, bad_request

JSON = dict[str, Any]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Lists of built-in kinds that strategic merge patch merges element-wise, keyed by field name.
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "addresses": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}
# Lists of scalars that strategic merge patch treats as sets.
_SET_LISTS = frozenset({"finalizers"})

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_ORDER_PREFIX = "$setElementOrder/"
_DELETE_FROM_PREFIX = "$deleteFromPrimitiveList/"


def patch_failed(message: str) -> ApiError:
    """A patch that is well-formed but cannot apply to the current object."""
    return ApiError(422, "Invalid", message)


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: JSON, operations: Any) -> JSON:
    """RFC 6902, including `test`; a failed test or a missing path is a 422."""
    if not isinstance(operations, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        result = jsonpatch.apply_patch(target, operations)
    except jsonpatch.JsonPatchTestFailed as error:
        raise patch_failed("the server rejected our request: a test operation failed") from error
    except (jsonpatch.JsonPatchConflict, jsonpointer.JsonPointerException) as error:
        raise patch_failed(f"the server rejected our request: {error}") from error
    except jsonpatch.InvalidJsonPatch as error:
        raise bad_request(f"invalid JSON patch: {error}") from error
    if not isinstance(result, dict):
        raise bad_request("the patch must produce an object")
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge for built-in kinds; see the module docstring for the approximation."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get(_DIRECTIVE) == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != _DIRECTIVE}
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith(_ORDER_PREFIX):
            continue
        if key.startswith(_DELETE_FROM_PREFIX):
            field = key.removeprefix(_DELETE_FROM_PREFIX)
            result[field] = [v for v in result.get(field) or [] if v not in value]
        elif value is None or (isinstance(value, dict) and value.get(_DIRECTIVE) == "delete"):
            result.pop(key, None)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = strategic_merge_patch(result.get(key), value)
    for key, order in patch.items():
        if key.startswith(_ORDER_PREFIX) and isinstance(
            result.get(key[len(_ORDER_PREFIX) :]), list
        ):
            field = key[len(_ORDER_PREFIX) :]
            result[field] = _reorder(result[field], order, _merge_key(field, order))
    if isinstance(patch.get(_RETAIN_KEYS), list):
        retained = set(patch[_RETAIN_KEYS])
        result = {k: v for k, v in result.items() if k in retained}
    return result


def _merge_key(field: str, elements: list[Any]) -> str | None:
    if field == "ports":  # container ports merge on containerPort, Service ports on port
        dicts = [e for e in elements if isinstance(e, dict)]
        return "containerPort" if any("containerPort" in e for e in dicts) else "port"
    return _MERGE_KEYS.get(field)


def _merge_list(field: str, current: Any, patch: list[Any]) -> list[Any]:
    current_list = list(current) if isinstance(current, list) else []
    if field in _SET_LISTS:
        merged = current_list + [v for v in patch if v not in current_list]
        return _patch_order(merged, current_list, patch, None)
    key = _merge_key(field, patch + current_list)
    if key is None or not all(isinstance(e, dict) for e in patch):
        return copy.deepcopy(patch)
    if any(e.get(_DIRECTIVE) == "replace" for e in patch):
        return [copy.deepcopy(e) for e in patch if e.get(_DIRECTIVE) != "replace"]
    merged = list(current_list)
    for element in patch:
        index = next(
            (
                i
                for i, e in enumerate(merged)
                if isinstance(e, dict) and e.get(key) == element.get(key)
            ),
            None,
        )
        if element.get(_DIRECTIVE) == "delete":
            if index is not None:
                del merged[index]
        elif index is None:
            merged.append(strategic_merge_patch({}, element))
        else:
            merged[index] = strategic_merge_patch(merged[index], element)
    return _patch_order(merged, current_list, patch, key)


def _patch_order(
    merged: list[Any], current: list[Any], patch: list[Any], key: str | None
) -> list[Any]:
    """The order a real server gives a merged list (normalizeElementOrder and
    mergeSortedSlice in k8s.io/apimachinery/pkg/util/strategicpatch/patch.go): the patch's
    items in its order and the items only the server had in theirs, interleaved by their
    place in the current list; an item new to the list goes before a server-only one."""
    named = [_identity(e, key) for e in patch if not _deletes(e)]
    by_identity = {_identity(e, key): e for e in merged}
    left = [by_identity[k] for k in dict.fromkeys(named) if k in by_identity]
    right = [e for e in merged if _identity(e, key) not in named]
    place = {_identity(e, key): i for i, e in enumerate(current)}
    result: list[Any] = []
    while left and right:
        here, there = place.get(_identity(left[0], key)), place.get(_identity(right[0], key))
        take_left = here is None or there is None or here < there
        result.append(left.pop(0) if take_left else right.pop(0))
    return result + left + right


def _deletes(element: Any) -> bool:
    return isinstance(element, dict) and element.get(_DIRECTIVE) == "delete"


def _identity(element: Any, key: str | None) -> Any:
    return element.get(key) if key is not None and isinstance(element, dict) else element


def _reorder(elements: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Apply a `$setElementOrder` list: listed elements first, in the given order."""

    wanted = [_identity(e, key) for e in order]
    listed = sorted(
        (e for e in elements if _identity(e, key) in wanted),
        key=lambda e: wanted.index(_identity(e, key)),
    )
    return listed + [e for e in elements if _identity(e, key) not in wanted]
