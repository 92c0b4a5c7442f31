"""Which grants of a component's RBAC rules its recorded API calls used.

A rule is expanded into single grants (API group, resource, verb, resource name or "" for
any); a call recorded by the API emulator (`GET /_sim/access`) uses every grant that allows it.
A grant no call used is excess permission, unless the test names why it is needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple


class Grant(NamedTuple):
    group: str
    resource: str
    """`res` or `res/sub`, as the rule writes it."""
    verb: str
    name: str = ""
    """One resourceName the rule lists; "" when it lists none (any name)."""


def grants(rules: Iterable[Mapping[str, Any]]) -> set[Grant]:
    return {
        Grant(group, resource, verb, name)
        for rule in rules
        for group in rule.get("apiGroups") or []
        for resource in rule.get("resources") or []
        for verb in rule.get("verbs") or []
        for name in rule.get("resourceNames") or [""]
    }


def _allows(grant: Grant, call: Mapping[str, Any]) -> bool:
    resource = call["resource"] + (f"/{call['subresource']}" if call["subresource"] else "")
    return (
        grant.group == call["group"]
        and grant.resource == resource
        and grant.verb == call["verb"]
        and grant.name in ("", call["name"])
    )


def used(granted: Iterable[Grant], calls: Iterable[Mapping[str, Any]]) -> set[Grant]:
    """The grants that allowed at least one of `calls` (entries of the access log)."""
    calls = [c for c in calls if c["allowed"]]
    return {g for g in granted if any(_allows(g, c) for c in calls)}
