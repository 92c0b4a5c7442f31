"""Which changes an update may make to a Pod's spec: a real API server refuses all others (422).

A pod's spec is fixed once created, except container images, `activeDeadlineSeconds`, added
tolerations and a negative `terminationGracePeriodSeconds` raised to 1. The rule compares the
old spec with the new one after putting the old values back into those fields, as Kubernetes'
pod validation does; the message is Kubernetes' own wording, followed by what differs.
"""

from __future__ import annotations

import copy
import json
from typing import Any

JSON = dict[str, Any]

UPDATABLE_FIELDS = ",".join(
    (
        "`spec.containers[*].image`",
        "`spec.initContainers[*].image`",
        "`spec.activeDeadlineSeconds`",
        "`spec.tolerations` (only additions to existing tolerations)",
        "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously "
        "negative)",
    )
)


def spec_update_errors(old: JSON, new: JSON) -> list[tuple[str, str]]:
    """(field, message) for each refused change from spec `old` to spec `new` (both defaulted)."""
    if new == old:
        return []
    problems: list[tuple[str, str]] = []
    munged = copy.deepcopy(new)
    for key in ("containers", "initContainers"):
        before, after = old.get(key) or [], munged.get(key) or []
        if len(before) == len(after):
            for old_container, container in zip(before, after, strict=True):
                _restore(container, old_container, "image")
    _restore(munged, old, "activeDeadlineSeconds")
    old_tolerations = old.get("tolerations") or []
    if any(t not in (new.get("tolerations") or []) for t in old_tolerations):
        problems.append(
            ("spec.tolerations", "Forbidden: existing toleration can not be modified except its "
             "tolerationSeconds")
        )  # fmt: skip
    _restore(munged, old, "tolerations")
    grace = old.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = grace
    if munged != old:
        changed = sorted(k for k in {*old, *munged} if old.get(k) != munged.get(k))
        diff = "\n".join(
            f"  spec.{key}: {_compact(old.get(key))} -> {_compact(munged.get(key))}"
            for key in changed
        )
        problems.append(
            ("spec", f"Forbidden: pod updates may not change fields other than {UPDATABLE_FIELDS}"
             f"\n{diff}")
        )  # fmt: skip
    return problems


def _restore(target: JSON, source: JSON, key: str) -> None:
    if key in source:
        target[key] = copy.deepcopy(source[key])
    else:
        target.pop(key, None)


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True)
