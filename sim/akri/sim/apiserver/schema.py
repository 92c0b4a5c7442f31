"""The cheap parts of a CRD's structural OpenAPI v3 schema: defaulting, pruning, validation.

Pure logic. A real server defaults missing fields, silently drops fields the schema does not
declare (unless `x-kubernetes-preserve-unknown-fields`) and refuses values that violate the
schema; code that relies on a field surviving a round trip must see the same here. CEL rules
(`x-kubernetes-validations`) and `format` are not checked.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

JSON = dict[str, Any]
Schema = dict[str, Any]

_ROOT_FIELDS = frozenset({"apiVersion", "kind", "metadata"})


def apply_defaults(value: Any, schema: Schema) -> Any:
    """Fill `default`s of absent properties, recursively, where the parent object exists."""
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        for name, sub in properties.items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = apply_defaults(value[name], sub)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in value.keys() - properties.keys():
                value[name] = apply_defaults(value[name], extra)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [apply_defaults(item, schema["items"]) for item in value]
    return value


def prune(value: Any, schema: Schema, path: str = "", root: bool = True) -> list[str]:
    """Drop undeclared fields in place; returns their paths (for `fieldValidation=Strict`)."""
    if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
        return []
    dropped: list[str] = []
    if isinstance(value, dict):
        properties: dict[str, Schema] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for name in list(value):
            sub_path = f"{path}.{name}" if path else name
            if root and name in _ROOT_FIELDS:
                continue
            if name in properties:
                dropped += prune(value[name], properties[name], sub_path, False)
            elif isinstance(extra, dict):
                dropped += prune(value[name], extra, sub_path, False)
            elif extra is True or schema.get("x-kubernetes-preserve-unknown-fields"):
                continue
            else:
                del value[name]
                dropped.append(sub_path)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            dropped += prune(item, schema["items"], f"{path}[{index}]", False)
    return dropped


def _type_matches(value: Any, expected: str) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "string":
        return isinstance(value, str)
    if expected == "array":
        return isinstance(value, list)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    return True


def _render(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def validate(value: Any, schema: Schema, path: str = "") -> list[tuple[str, str]]:
    """Violations as (field path, message) pairs; empty when the value conforms."""
    field = path or "<root>"
    if value is None:
        return (
            [] if schema.get("nullable") else [(field, 'Invalid value: "null": must not be null')]
        )
    if schema.get("x-kubernetes-int-or-string"):
        if not isinstance(value, int | str) or isinstance(value, bool):
            return [(field, "Invalid value: must be an integer or a string")]
    elif (expected := schema.get("type")) and not _type_matches(value, expected):
        actual = type(value).__name__
        return [(field, f'Invalid value: "{actual}": {field} in body must be of type {expected}')]
    errors = _check_scalar(value, schema, field)
    errors += _check_combinators(value, schema, path)
    if isinstance(value, dict):
        errors += _check_object(value, schema, path)
    elif isinstance(value, list):
        errors += _check_array(value, schema, path)
    return errors


def _check_scalar(value: Any, schema: Schema, field: str) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
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


def _check_combinators(value: Any, schema: Schema, path: str) -> list[tuple[str, str]]:
    field = path or "<root>"
    errors: list[tuple[str, str]] = []
    for sub in schema.get("allOf") or []:
        errors += validate(value, sub, path)
    any_of = schema.get("anyOf")
    if any_of and all(validate(value, sub, path) for sub in any_of):
        errors.append((field, "Invalid value: must validate at least one schema (anyOf)"))
    if one_of := schema.get("oneOf"):
        passing = sum(not validate(value, sub, path) for sub in one_of)
        if passing != 1:
            errors.append((field, "Invalid value: must validate one and only one schema (oneOf)"))
    if "not" in schema and not validate(value, schema["not"], path):
        errors.append((field, "Invalid value: must not validate the schema (not)"))
    return errors


def _check_object(value: JSON, schema: Schema, path: str) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or []:
        if name not in value:
            errors.append((f"{prefix}{name}", "Required value"))
    properties: dict[str, Schema] = schema.get("properties") or {}
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if not path and name in _ROOT_FIELDS:
            continue
        if name in properties:
            errors += validate(item, properties[name], f"{prefix}{name}")
        elif isinstance(extra, dict):
            errors += validate(item, extra, f"{prefix}{name}")
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        errors.append(
            (
                path or "<root>",
                f"Too many: {len(value)}: must have at most {schema['maxProperties']} items",
            )
        )
    return errors


def _check_array(value: list[Any], schema: Schema, path: str) -> list[tuple[str, str]]:
    errors: list[tuple[str, str]] = []
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
    if isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            errors += validate(item, schema["items"], f"{path}[{index}]")
    return errors
