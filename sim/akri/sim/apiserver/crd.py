"""CustomResourceDefinition objects turned into served kinds.

Pure logic: validating a CRD, deriving one `ResourceType` per served version (schema, status
subresource, printer columns, selectable fields) and the status a real server reports once the
names are accepted and the kind is established.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver import cel_rules, jsonpath
from akri.sim.apiserver.core_kinds import AGE, CRD_GROUP, NAME
from akri.sim.apiserver.errors import invalid
from akri.sim.apiserver.resources import Column, ResourceType, version_priority
from akri.sim.apiserver.schema import Structural
from akri.sim.apiserver.selectors import field_path

JSON = dict[str, Any]

_SCOPES = ("Namespaced", "Cluster")


def check(crd: JSON) -> None:
    """Refuse (422) a CRD that a real server would refuse for the reasons that matter here."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    causes: list[tuple[str, str]] = []
    if "." not in group:
        causes.append(
            ("spec.group", f'Invalid value: "{group}": should be a domain with at least one dot')
        )
    for required in ("plural", "kind"):
        if not names.get(required):
            causes.append((f"spec.names.{required}", "Required value"))
    if spec.get("scope") not in _SCOPES:
        causes.append(
            (
                "spec.scope",
                f'Unsupported value: "{spec.get("scope")}": '
                'supported values: "Cluster", "Namespaced"',
            )
        )
    name = (crd.get("metadata") or {}).get("name", "")
    if names.get("plural") and name != f"{names['plural']}.{group}":
        causes.append(
            ("metadata.name", f'Invalid value: "{name}": must be spec.names.plural+"."+spec.group')
        )
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("spec.versions", "Invalid value: must have at least one version"))
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            (
                "spec.versions",
                "Invalid value: must have exactly one version marked as storage version",
            )
        )
    for index, version in enumerate(versions):
        schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        if version.get("served") and schema.get("type") != "object":
            causes.append(
                (
                    f"spec.versions[{index}].schema.openAPIV3Schema.type",
                    "Required value: must be object at the root",
                )
            )
    if causes:
        raise invalid(CRD_GROUP, "CustomResourceDefinition", name, causes)


def _column(definition: JSON) -> Column:
    path = definition["jsonPath"]

    def cell(obj: JSON) -> Any:
        found = jsonpath.evaluate(path, obj)
        return found[0] if found else None

    return Column(
        definition["name"],
        definition.get("type", "string"),
        cell,
        definition.get("description", ""),
        definition.get("priority", 0),
        definition.get("format", ""),
    )


def resource_types(crd: JSON) -> list[ResourceType]:
    """One kind per served version; the object must have passed `check`."""
    spec = crd["spec"]
    names = spec["names"]
    namespaced = spec["scope"] == "Namespaced"
    kinds = []
    for version in spec["versions"]:
        if not version.get("served"):
            continue
        printer = version.get("additionalPrinterColumns")
        columns = (NAME, *map(_column, printer)) if printer else (NAME, AGE)
        selectable = {
            f["jsonPath"].lstrip("."): field_path(f["jsonPath"].lstrip("."))
            for f in version.get("selectableFields") or []
        }
        has_status = "status" in (version.get("subresources") or {})
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        kinds.append(
            ResourceType(
                group=spec["group"],
                version=version["name"],
                kind=names["kind"],
                plural=names["plural"],
                singular=names.get("singular") or names["kind"].lower(),
                namespaced=namespaced,
                short_names=tuple(names.get("shortNames") or ()),
                categories=tuple(names.get("categories") or ()),
                subresources=frozenset({"status"}) if has_status else frozenset(),
                columns=columns,
                field_labels=selectable,
                schema=schema,
                structural=Structural.of(schema) if schema is not None else None,
                rules=cel_rules.rule_tree(schema) if schema is not None else None,
                custom=True,
                status_on_create={} if has_status else None,
                tracks_generation=True,
                returns_deleted_object=True,
                unconditional_update=False,
            )
        )
    return sorted(kinds, key=lambda kind: version_priority(kind.version))


def established_status(crd: JSON, now: str) -> JSON:
    """The status a real server converges to for an accepted CRD."""
    names = dict(crd["spec"]["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", f"{names['kind']}List")
    storage = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
    stored = (crd.get("status") or {}).get("storedVersions") or []
    return {
        "acceptedNames": names,
        "storedVersions": stored if storage in stored else [*stored, storage],
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": now,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": now,
            },
        ],
    }
