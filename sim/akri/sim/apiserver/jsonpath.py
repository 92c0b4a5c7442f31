"""The JSONPath subset CRD printer columns use: `.a.b`, `[n]`, `[*]` and `[?(@.k=="v")]`.

Pure logic, for evaluating `additionalPrinterColumns[].jsonPath` when serving a Table.
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(
    r"""\.(?P<field>[^.\[]+)"""
    r"""|\[(?P<index>-?\d+|\*)\]"""
    r"""|\[\?\(@\.(?P<key>[^=!\s]+)\s*(?P<op>==|!=)\s*["']?(?P<value>[^"')]*)["']?\)\]"""
)


def evaluate(path: str, obj: Any) -> list[Any]:
    """Every value the path selects, in document order; empty when nothing matches."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    path = path.removeprefix("$")
    values = [obj]
    position = 0
    while position < len(path):
        match = _STEP.match(path, position)
        if match is None:
            raise ValueError(f"unsupported JSONPath {path!r} at {path[position:]!r}")
        values = [out for value in values for out in _step(match, value)]
        position = match.end()
    return values


def _step(match: re.Match[str], value: Any) -> list[Any]:
    if match["field"] is not None:
        return (
            [value[match["field"]]] if isinstance(value, dict) and match["field"] in value else []
        )
    if not isinstance(value, list):
        return []
    if match["index"] == "*":
        return list(value)
    if match["index"] is not None:
        index = int(match["index"])
        return [value[index]] if -len(value) <= index < len(value) else []
    wanted = match["value"]
    return [
        item
        for item in value
        if isinstance(item, dict)
        and (str(item.get(match["key"])) == wanted) == (match["op"] == "==")
    ]
