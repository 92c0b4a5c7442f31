"""The cheap parts of a CRD's structural OpenAPI v3 schema: defaulting, pruning, validation.

Pure logic. A real server defaults missing fields, silently drops fields the schema does not
declare (unless `x-kubernetes-preserve-unknown-fields`) and refuses values that violate the
schema; code that relies on a field surviving a round trip must see the same here. CEL rules
(`x-kubernetes-validations`, see `cel_rules`) and `format` are not checked here.

A schema is read once into a tree of `Node`s (`Structural`, one per served version), since
every create and update of the kind passes all three steps over the whole object: the tree
knows which checks a node has, so a value is only checked for those, and a subtree without
defaults is not walked for defaulting.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

JSON = dict[str, Any]
Schema = dict[str, Any]
Problems = list[tuple[str, str]]

_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})
_SCALAR_KEYWORDS = ("enum", "minimum", "maximum", "pattern", "minLength", "maxLength")
_COMBINATORS = ("allOf", "anyOf", "oneOf", "not")
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}
_PLAIN = {"string": str, "boolean": bool, "integer": int}
"""Types whose values need no check beyond their exact Python type when the node has none."""


@dataclass(eq=False)
class Node:
    """One schema node as the three steps read it."""

    schema: Schema
    expected: str | None = None
    """The `type` its values must have."""
    properties: dict[str, Node] = field(default_factory=dict)
    additional: Node | None = None
    """`additionalProperties` given as a schema."""
    additional_allowed: bool = False
    """`additionalProperties: true`."""
    items: Node | None = None
    preserve_unknown: bool = False
    int_or_string: bool = False
    nullable: bool = False
    has_default: bool = False
    defaulting: bool = False
    """A default on this node's properties or anywhere below: defaulting walks it."""
    scalar: bool = False
    combined: bool = False
    all_of: tuple[Node, ...] = ()
    any_of: tuple[Node, ...] = ()
    one_of: tuple[Node, ...] = ()
    negated: Node | None = None
    plain: type | None = None
    """Set when a value of exactly this Python type conforms, whatever it is."""


def compile_node(schema: Schema) -> Node:
    """Read a schema (dict) into its `Node` tree."""
    properties = {name: compile_node(sub) for name, sub in (schema.get("properties") or {}).items()}
    extra, items = schema.get("additionalProperties"), schema.get("items")
    node = Node(
        schema,
        expected=schema.get("type"),
        properties=properties,
        additional=compile_node(extra) if isinstance(extra, dict) else None,
        additional_allowed=extra is True,
        items=compile_node(items) if isinstance(items, dict) else None,
        preserve_unknown=bool(schema.get("x-kubernetes-preserve-unknown-fields")),
        int_or_string=bool(schema.get("x-kubernetes-int-or-string")),
        nullable=bool(schema.get("nullable")),
        has_default="default" in schema,
        scalar=any(k in schema for k in _SCALAR_KEYWORDS),
        combined=any(k in schema for k in _COMBINATORS),
        all_of=tuple(compile_node(sub) for sub in schema.get("allOf") or []),
        any_of=tuple(compile_node(sub) for sub in schema.get("anyOf") or []),
        one_of=tuple(compile_node(sub) for sub in schema.get("oneOf") or []),
        negated=compile_node(schema["not"]) if "not" in schema else None,
    )
    children = [*properties.values(), node.additional, node.items]
    node.defaulting = any(c is not None and (c.has_default or c.defaulting) for c in children)
    simple = not (node.scalar or node.combined or node.int_or_string or node.properties)
    simple = simple and node.additional is None and node.items is None
    node.plain = _PLAIN.get(node.expected or "") if simple else None
    return node


@dataclass(frozen=True)
class Structural:
    """A CRD version's schema, read once: defaults, pruning and validation of its objects."""

    root: Node

    @classmethod
    def of(cls, schema: Schema) -> Structural:
        return cls(compile_node(schema))

    def apply_defaults(self, value: Any) -> Any:
        """Fill `default`s of absent properties, recursively, where the parent object exists."""
        return _apply_defaults(value, self.root)

    def prune(self, value: Any) -> list[str]:
        """Drop undeclared fields in place; their paths (for `fieldValidation=Strict`)."""
        return _prune(value, self.root, "", True)

    def validate(self, value: Any) -> Problems:
        """Violations as (field path, message) pairs; empty when the value conforms."""
        return _validate(value, self.root, "")


def _apply_defaults(value: Any, node: Node) -> Any:
    if isinstance(value, dict):
        for name, sub in node.properties.items():
            if sub.has_default and name not in value:
                value[name] = copy.deepcopy(sub.schema["default"])
            if sub.defaulting and name in value:
                value[name] = _apply_defaults(value[name], sub)
        extra = node.additional
        if extra is not None and extra.defaulting:
            for name in value.keys() - node.properties.keys():
                value[name] = _apply_defaults(value[name], extra)
    elif isinstance(value, list) and node.items is not None:
        return [_apply_defaults(item, node.items) for item in value]
    return value


def _prune(value: Any, node: Node, path: str, root: bool) -> list[str]:
    if node.preserve_unknown and "properties" not in node.schema:
        return []
    dropped: list[str] = []
    if isinstance(value, dict):
        properties, extra = node.properties, node.additional
        for name in list(value):
            if root and name in _ROOT_FIELDS:
                continue
            item = value[name]
            sub = properties.get(name)
            if sub is None:
                sub = extra
            if sub is not None:
                if isinstance(item, dict | list):
                    sub_path = f"{path}.{name}" if path else name
                    dropped += _prune(item, sub, sub_path, False)
            elif not (node.additional_allowed or node.preserve_unknown):
                del value[name]
                dropped.append(f"{path}.{name}" if path else name)
    elif isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                dropped += _prune(item, node.items, f"{path}[{index}]", False)
    return dropped


def _render(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def _validate(value: Any, node: Node, path: str) -> Problems:
    field = path or "<root>"
    if value is None:
        return [] if node.nullable else [(field, 'Invalid value: "null": must not be null')]
    if node.int_or_string:
        if not isinstance(value, int | str) or isinstance(value, bool):
            return [(field, "Invalid value: must be an integer or a string")]
    elif node.expected and not _TYPES.get(node.expected, _anything)(value):
        actual, expected = type(value).__name__, node.expected
        return [(field, f'Invalid value: "{actual}": {field} in body must be of type {expected}')]
    errors = _check_scalar(value, node, field) if node.scalar else []
    if node.combined:
        errors += _check_combinators(value, node, path)
    if isinstance(value, dict):
        errors += _check_object(value, node, path)
    elif isinstance(value, list):
        errors += _check_array(value, node, path)
    return errors


def _anything(value: Any) -> bool:
    return True


def _check_scalar(value: Any, node: Node, field: str) -> Problems:
    schema = node.schema
    errors: Problems = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(_render(v) for v in schema["enum"])
        errors.append((field, f"Unsupported value: {_render(value)}: supported values: {allowed}"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema:
            bound = schema["minimum"]
            if value < bound or (schema.get("exclusiveMinimum") and value == bound):
                relation = (
                    "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
                )
                errors.append(
                    (
                        field,
                        f"Invalid value: {_render(value)}: {field} in body should be {relation} "
                        f"{bound}",
                    )
                )
        if "maximum" in schema:
            bound = schema["maximum"]
            if value > bound or (schema.get("exclusiveMaximum") and value == bound):
                relation = (
                    "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
                )
                errors.append(
                    (
                        field,
                        f"Invalid value: {_render(value)}: {field} in body should be {relation} "
                        f"{bound}",
                    )
                )
    if isinstance(value, str):
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(
                (
                    field,
                    f"Invalid value: {_render(value)}: {field} in body should match "
                    f"'{schema['pattern']}'",
                )
            )
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(
                (
                    field,
                    f"Invalid value: {_render(value)}: {field} in body should be at least "
                    f"{schema['minLength']} chars long",
                )
            )
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append((field, f"Too long: may not be longer than {schema['maxLength']}"))
    return errors


def _check_combinators(value: Any, node: Node, path: str) -> Problems:
    field = path or "<root>"
    errors: Problems = []
    for sub in node.all_of:
        errors += _validate(value, sub, path)
    if node.any_of and all(_validate(value, sub, path) for sub in node.any_of):
        errors.append((field, "Invalid value: must validate at least one schema (anyOf)"))
    if node.one_of:
        passing = sum(not _validate(value, sub, path) for sub in node.one_of)
        if passing != 1:
            errors.append((field, "Invalid value: must validate one and only one schema (oneOf)"))
    if node.negated is not None and not _validate(value, node.negated, path):
        errors.append((field, "Invalid value: must not validate the schema (not)"))
    return errors


def _check_object(value: JSON, node: Node, path: str) -> Problems:
    schema = node.schema
    errors: Problems = []
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or []:
        if name not in value:
            errors.append((f"{prefix}{name}", "Required value"))
    properties, extra = node.properties, node.additional
    for name, item in value.items():
        if not path and name in _ROOT_FIELDS:
            continue
        sub = properties.get(name)
        if sub is None:
            sub = extra
        if sub is not None and not (sub.plain is not None and type(item) is sub.plain):
            errors += _validate(item, sub, f"{prefix}{name}")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(
            (
                path or "<root>",
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
            )
        )
    return errors


def _check_array(value: list[Any], node: Node, path: str) -> Problems:
    schema = node.schema
    errors: Problems = []
    field = path or "<root>"
    if "minItems" in schema and len(value) < schema["minItems"]:
        errors.append(
            (
                field,
                f"Invalid value: {len(value)}: {field} in body should have at least "
                f"{schema['minItems']} items",
            )
        )
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(
            (field, f"Too many: {len(value)}: must have at most {schema['maxItems']} items")
        )
    if node.items is not None:
        sub = node.items
        for index, item in enumerate(value):
            if not (sub.plain is not None and type(item) is sub.plain):
                errors += _validate(item, sub, f"{path}[{index}]")
    return errors
