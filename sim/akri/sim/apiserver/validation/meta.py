"""Object metadata (ValidateObjectMeta in k8s.io/apimachinery/pkg/api/validation/objectmeta.go;
ValidateLabels and ValidateAnnotations in .../apis/meta/v1/validation/validation.go)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from akri.sim.apiserver.validation import field, names
from akri.sim.apiserver.validation.field import Problems

NameCheck = Callable[[str], list[str]]


def dns_label_no_dots(name: str) -> list[str]:
    """Namespace and Service names (ValidateNamespaceName, ValidateServiceName): a DNS label;
    a DNS subdomain with dots is refused in its own words."""
    if "." in name and not names.dns1123_subdomain(name):
        return ["must not contain dots"]
    return names.dns1123_label(name)


def labels(values: Any, path: str) -> Problems:
    """ValidateLabels: each key a qualified name, each value a label value."""
    problems: Problems = []
    for key, value in field.as_dict(values).items():
        problems += field.each(path, names.qualified_name(key), key)
        text = value if isinstance(value, str) else str(value)
        problems += field.each(path, names.label_value(text), text)
    return problems


def annotation_keys(values: Any, path: str) -> Problems:
    """ValidateAnnotations: each key a qualified name (lower-cased first, as Kubernetes does)."""
    problems: Problems = []
    for key in field.as_dict(values):
        problems += field.each(path, names.qualified_name(key.lower()), key)
    return problems


def _owner_references(meta: dict[str, Any]) -> Problems:
    problems: Problems = []
    references = field.as_list(meta.get("ownerReferences"))
    for index, reference in enumerate(references):
        for required in ("apiVersion", "kind", "name", "uid"):
            if not field.as_dict(reference).get(required):
                problems.append(field.required(f"metadata.ownerReferences[{index}].{required}"))
    if sum(1 for r in references if field.as_dict(r).get("controller")) > 1:
        problems.append(
            field.invalid(
                "metadata.ownerReferences",
                field.OMIT,
                "Only one reference can have Controller set to true",
            )
        )
    return problems


def object_meta(meta: dict[str, Any], name_check: NameCheck, path: str = "metadata") -> Problems:
    """The name (or generateName, its trailing dash allowed), labels, annotations and owner
    references of an object or a template's metadata."""
    problems: Problems = []
    prefix = meta.get("generateName")
    if isinstance(prefix, str) and prefix:
        masked = prefix[:-1] + "a" if prefix.endswith("-") else prefix
        problems += field.each(f"{path}.generateName", name_check(masked), prefix)
    name = meta.get("name")
    if isinstance(name, str) and name:
        problems += field.each(f"{path}.name", name_check(name), name)
    problems += labels(meta.get("labels"), f"{path}.labels")
    problems += annotation_keys(meta.get("annotations"), f"{path}.annotations")
    return problems + _owner_references(meta)
