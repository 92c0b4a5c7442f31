"""The `dryRun` query parameter of writes: `All` or nothing, as kube-apiserver accepts it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from akri.sim.apiserver import errors

ALL = "All"
_OPTIONS = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
    "deletecollection": "DeleteOptions",
}


def requested(values: Sequence[str], verb: str) -> bool:
    """Whether a write is a dry run; a value other than `All` is refused as invalid options."""
    if verb not in _OPTIONS or not values:
        return False
    if any(v != ALL for v in values):
        given = json.dumps(list(values), separators=(",", ":"))
        problem = f'Unsupported value: {given}: supported values: "{ALL}"'
        raise errors.ApiError(
            422,
            "Invalid",
            f'{_OPTIONS[verb]}.meta.k8s.io "" is invalid: dryRun: {problem}',
            {
                "group": "meta.k8s.io",
                "kind": _OPTIONS[verb],
                "causes": [
                    {"reason": "FieldValueNotSupported", "message": problem, "field": "dryRun"}
                ],
            },
        )
    return True


def in_body(options: Any) -> list[str]:
    """The `dryRun` of a DeleteOptions body (where kubectl puts it)."""
    values = options.get("dryRun") if isinstance(options, dict) else None
    return [str(v) for v in values] if isinstance(values, list) else []
