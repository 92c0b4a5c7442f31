"""CRD validation rules (`x-kubernetes-validations`, CEL), checked on every create and update.

Each rule is evaluated with `self` bound to the value its schema node describes (every item
of an array, every value of a map) and, on an update where the old object has that value
too, `oldSelf` bound to the old one; a rule that mentions `oldSelf` (a transition rule) is
skipped when there is no old value, as Kubernetes does. A failed rule is reported as the API
server reports it: `<path>: Invalid value: <value>: <message>`, the value shown only for a
scalar (checked on kube-apiserver 1.36).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import celpy
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from akri.sim.apiserver.validation import field

JSON = dict[str, Any]
RULES = "x-kubernetes-validations"
_ABSENT = object()
_BRANCHES = ("properties", "additionalProperties", "items")


def rule_tree(schema: JSON) -> JSON | None:
    """The branches of `schema` that lead to a rule (None: it has none), computed once per
    served version so that checking an object walks only the values some rule reads. A
    property without rules stays as an empty node: its name keeps its path spelling and never
    falls back to `additionalProperties`."""
    children = {name: rule_tree(sub) for name, sub in (schema.get("properties") or {}).items()}
    extra, items = schema.get("additionalProperties"), schema.get("items")
    extra_tree = rule_tree(extra) if isinstance(extra, dict) else None
    items_tree = rule_tree(items) if isinstance(items, dict) else None
    if not schema.get(RULES) and extra_tree is items_tree is None and not any(children.values()):
        return None
    node = {k: v for k, v in schema.items() if k not in _BRANCHES}
    node["properties"] = {name: tree or {} for name, tree in children.items()}
    if extra_tree is not None:
        node["additionalProperties"] = extra_tree
    if items_tree is not None:
        node["items"] = items_tree
    return node


@functools.cache
def program(rule: str) -> Any:
    environment = celpy.Environment()
    return environment.program(environment.compile(rule))


def violations(schema: JSON, obj: Any, old: Any = None) -> list[tuple[str, str]]:
    """(field, message) for each rule of `schema` that `obj` breaks (`old`: the stored object)."""
    problems: list[tuple[str, str]] = []
    for path, node, value, old_value in _walk(schema, obj, _ABSENT if old is None else old, ""):
        for rule in node.get(RULES) or []:
            problem = _check(rule, node, value, old_value)
            if problem is not None:
                field = path + (rule.get("fieldPath") or "")
                problems.append((field.lstrip("."), problem))
    return problems


def _walk(schema: JSON, value: Any, old: Any, path: str) -> Iterator[tuple[str, JSON, Any, Any]]:
    """Every (path, schema node, value, old value or _ABSENT) that carries a value."""
    if value is None:
        return
    yield path, schema, value, old
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            child = properties.get(key, extra)
            if not isinstance(child, dict) or not child:
                continue
            old_item = old.get(key, _ABSENT) if isinstance(old, dict) else _ABSENT
            child_path = f"{path}.{key}" if key in properties else f"{path}[{key}]"
            yield from _walk(child, item, old_item, child_path)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            # Old items correlate only in map-type lists (by key); treat others as new.
            yield from _walk(schema["items"], item, _ABSENT, f"{path}[{index}]")


def _check(rule: JSON, node: JSON, value: Any, old: Any) -> str | None:
    text = rule.get("rule", "")
    transition = "oldSelf" in text
    if transition and old is _ABSENT:
        return None
    activation = {"self": json_to_cel(value)}
    if transition:
        activation["oldSelf"] = json_to_cel(old)
    shown = field.OMIT if isinstance(value, dict | list) else value
    try:
        passed = program(text).evaluate(activation)
    except (CELEvalError, CELParseError, TypeError, ValueError) as error:
        return field.invalid("", shown, f"{error} evaluating rule: {text}")[1]
    if bool(passed):
        return None
    return field.invalid("", shown, rule.get("message") or f"failed rule: {text}")[1]
