"""Field error messages as kube-apiserver words them (k8s.io/apimachinery/pkg/util/validation/
field/errors.go: `Error.ErrorBody`), and the (path, message) pairs validation returns."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

Problem = tuple[str, str]
Problems = list[Problem]

OMIT = object()
"""A bad value not shown in the message (the value of objects and lists)."""


def go_value(value: Any) -> str:
    """A bad value as `ErrorBody` prints it: strings quoted, scalars bare, null for none,
    anything else as JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"))


def _with(body: str, detail: str) -> str:
    return f"{body}: {detail}" if detail else body


def required(path: str, detail: str = "") -> Problem:
    return (path, _with("Required value", detail))


def forbidden(path: str, detail: str) -> Problem:
    return (path, _with("Forbidden", detail))


def invalid(path: str, value: Any, detail: str) -> Problem:
    body = "Invalid value" if value is OMIT else f"Invalid value: {go_value(value)}"
    return (path, _with(body, detail))


def duplicate(path: str, value: Any) -> Problem:
    return (path, f"Duplicate value: {go_value(value)}")


def not_found(path: str, value: Any, detail: str = "") -> Problem:
    return (path, _with(f"Not found: {go_value(value)}", detail))


def not_supported(path: str, value: Any, supported: Iterable[str]) -> Problem:
    """`supported` in the order the server lists them (mostly sorted, not always)."""
    listed = ", ".join(json.dumps(v) for v in supported)
    return (path, f"Unsupported value: {go_value(value)}: supported values: {listed}")


def too_long(path: str, limit: int) -> Problem:
    return (path, f"Too long: may not be more than {limit} bytes")


def too_many(path: str, count: int, limit: int) -> Problem:
    return (path, f"Too many: {count}: must have at most {limit} items")


def each(path: str, messages: Iterable[str], value: Any) -> Problems:
    """An `Invalid` problem per message of a format check (validation.IsXxx returns several)."""
    return [invalid(path, value, message) for message in messages]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
