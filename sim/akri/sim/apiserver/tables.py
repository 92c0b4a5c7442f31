"""`meta.k8s.io/v1` Table rendering, which kubectl asks for on `get`.

Pure logic: column definitions and cells from a kind's printer columns, dates shown as ages the
way the real server renders them for custom resources.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from akri.sim.apiserver.resources import ResourceType

JSON = dict[str, Any]

TABLE_API_VERSION = "meta.k8s.io/v1"


def wants_table(accept: str) -> bool:
    """kubectl lists Table first in Accept; plain clients never mention it."""
    first = accept.split(",")[0]
    return "as=Table" in first and "g=meta.k8s.io" in first


def human_age(timestamp: str, now: datetime.datetime | None = None) -> str:
    """A short duration like kubectl's AGE column: 45s, 5m10s, 3h, 12d, 2y30d."""
    try:
        then = datetime.datetime.fromisoformat(timestamp)
    except (TypeError, ValueError):
        return "<unknown>"
    if then.tzinfo is None:
        then = then.replace(tzinfo=datetime.UTC)
    seconds = int(((now or datetime.datetime.now(datetime.UTC)) - then).total_seconds())
    if seconds < 0:
        return "0s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 365 * 2:
        return f"{days}d"
    return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"


def _cell(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "date":
        return human_age(str(value))
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if kind in ("integer", "number", "boolean") and isinstance(value, int | float | bool):
        return value
    return str(value) if not isinstance(value, bool) else str(value).lower()


def column_definitions(resource: ResourceType) -> list[JSON]:
    return [
        {
            "name": column.name,
            "type": column.type,
            "format": column.format,
            "description": column.description,
            "priority": column.priority,
        }
        for column in resource.columns
    ]


def row(resource: ResourceType, obj: JSON, include_object: str) -> JSON:
    cells = []
    for column in resource.columns:
        try:
            value = column.cell(obj)
        except (KeyError, TypeError, ValueError):
            value = None
        cells.append(_cell(column.type, value))
    result: JSON = {"cells": cells}
    if include_object == "Object":
        result["object"] = obj
    elif include_object != "None":
        result["object"] = {
            "kind": "PartialObjectMetadata",
            "apiVersion": TABLE_API_VERSION,
            "metadata": obj["metadata"],
        }
    return result


def table(
    resource: ResourceType,
    objects: list[JSON],
    include_object: str,
    list_meta: JSON,
    with_columns: bool = True,
) -> JSON:
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": list_meta,
        "columnDefinitions": column_definitions(resource) if with_columns else [],
        "rows": [row(resource, obj, include_object) for obj in objects],
    }
