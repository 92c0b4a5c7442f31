"""What the server knows about each kind it serves, and the registry that maps URLs to kinds.

Pure data. Built-in kinds (`core_kinds`) and CRD-defined kinds (`crd`) are both described by a
`ResourceType`, so storage, validation, discovery and tables treat them alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from akri.sim.apiserver.schema import Structural
from akri.sim.apiserver.selectors import FieldGetter, field_path
from akri.sim.apiserver.validation import names

JSON = dict[str, Any]

STANDARD_VERBS = (
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
)


@dataclass(frozen=True)
class Column:
    """One printer column: `cell` extracts the raw value; `type` says how to render it."""

    name: str
    type: str
    cell: Callable[[JSON], Any]
    description: str = ""
    priority: int = 0
    format: str = ""


def metadata_fields(namespaced: bool) -> dict[str, FieldGetter]:
    fields = {"metadata.name": field_path("metadata.name")}
    if namespaced:
        fields["metadata.namespace"] = field_path("metadata.namespace")
    return fields


@dataclass(frozen=True)
class ResourceType:
    """A kind served at /api/v1 or /apis/<group>/<version> and how its objects behave."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    subresources: frozenset[str] = frozenset()
    columns: tuple[Column, ...] = ()
    field_labels: Mapping[str, FieldGetter] = field(default_factory=dict)
    # OpenAPI v3 schema of a custom resource: defaults, pruning and validation come from it.
    schema: JSON | None = None
    # `schema` read once for defaulting, pruning and validation (None: no schema).
    structural: Structural | None = None
    # The part of `schema` that leads to CEL rules (`cel_rules.rule_tree`); None: no rules.
    rules: JSON | None = None
    custom: bool = False
    # Status a create starts with when the kind has a status subresource; None keeps the
    # client's status (Nodes), an empty dict drops it (custom resources).
    status_on_create: JSON | None = None
    # Kind-specific defaults applied on create (a real server's defaulting and PrepareForCreate).
    prepare_create: Callable[[JSON], None] | None = None
    # Kind-specific rewriting of every written object (e.g. Secret stringData into data).
    normalize: Callable[[JSON], None] | None = None
    # Kind-specific validation on every create and update: (field, message) per problem (422);
    # a ValueError means the object cannot be decoded at all (400).
    validate: Callable[[JSON], list[tuple[str, str]]] | None = None
    # What an update (not of a subresource) may change: (field, message) per refused change,
    # given the stored object and the proposed one.
    validate_update: Callable[[JSON, JSON], list[tuple[str, str]]] | None = None
    # The format of metadata.name (and generateName): its messages, none when valid.
    name_check: Callable[[str], list[str]] = names.dns1123_subdomain
    tracks_generation: bool = False
    returns_deleted_object: bool = False
    orphan_by_default: bool = False
    # PUT without metadata.resourceVersion is refused for custom resources (422).
    unconditional_update: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> tuple[str, str]:
        """Storage identity: all served versions of one kind share their objects."""
        return (self.group, self.plural)

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def resource_name(self) -> str:
        """The `<plural>.<group>` spelling used in messages and discovery."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @cached_property
    def selectable_fields(self) -> Mapping[str, FieldGetter]:
        return {**metadata_fields(self.namespaced), **self.field_labels}


class Registry:
    """Kinds by URL coordinates; CRDs add and remove entries while the server runs."""

    def __init__(self) -> None:
        self._types: dict[tuple[str, str, str], ResourceType] = {}
        self._preferred: dict[str, str] = {}

    def add(self, resource: ResourceType, preferred: bool = True) -> None:
        self._types[(resource.group, resource.version, resource.plural)] = resource
        if preferred or resource.group not in self._preferred:
            self._preferred[resource.group] = resource.version

    def remove(self, group: str, plural: str) -> None:
        for coordinates in [c for c in self._types if c[0] == group and c[2] == plural]:
            del self._types[coordinates]
        if not any(c[0] == group for c in self._types):
            self._preferred.pop(group, None)
        elif not any(c[0] == group and c[1] == self._preferred[group] for c in self._types):
            self._preferred[group] = next(c[1] for c in self._types if c[0] == group)

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def versions(self, group: str) -> list[str]:
        return sorted({c[1] for c in self._types if c[0] == group}, key=version_priority)

    def groups(self) -> list[str]:
        return sorted({c[0] for c in self._types})

    def preferred_version(self, group: str) -> str:
        return self._preferred[group]

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self if (r.group, r.version) == (group, version)]

    def storage_types(self) -> Iterator[ResourceType]:
        """One ResourceType per stored kind (the preferred version where there are several)."""
        seen: set[tuple[str, str]] = set()
        for resource in sorted(self, key=lambda r: r.version != self._preferred.get(r.group)):
            if resource.key not in seen:
                seen.add(resource.key)
                yield resource

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._types.values()))


def version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA before beta before alpha, higher numbers first."""
    major, _, rest = version.removeprefix("v").partition("alpha")
    stage = 2
    if not rest and "beta" in version:
        major, _, rest = version.removeprefix("v").partition("beta")
        stage = 1
    elif rest:
        stage = 0
    try:
        return (-stage, -int(major), -int(rest or 0))
    except ValueError:
        return (1, 0, 0)
