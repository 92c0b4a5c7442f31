"""OpenAPI v3 component schemas of the served kinds, for `kubectl explain`.

A custom resource's schema is its CRD's `openAPIV3Schema`, with `apiVersion`, `kind` and
`metadata` added as kube-apiserver adds them. A built-in kind's schema is generated from the
protobuf messages the emulator decodes (akri/sim/proto/kubernetes): their fields are the ones the
emulator models, a subset of a cluster's, and each such schema says so in its description.
kubectl finds a kind's schema by its `x-kubernetes-group-version-kind`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pool
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from akri.sim.apiserver import protobuf  # noqa: F401  # registers the messages described here
from akri.sim.apiserver.resources import ResourceType

JSON = dict[str, Any]
PARTIAL = (
    "{kind} as akri sim models it: the fields the emulator knows, a subset of a cluster's "
    "(see the Kubernetes API reference for the rest)."
)
_META = "k8s.io.apimachinery"
_SCALARS: dict[int, JSON] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "double"},
}
_SPECIAL: dict[str, JSON] = {
    f"{_META}.Time": {"type": "string", "format": "date-time"},
    f"{_META}.MicroTime": {"type": "string", "format": "date-time"},
    f"{_META}.IntOrString": {"x-kubernetes-int-or-string": True},
    f"{_META}.Quantity": {"x-kubernetes-int-or-string": True},
}


def _name(full_name: str) -> str:
    """`k8s.io.api.core.v1.Pod` -> `io.k8s.api.core.v1.Pod`, as Kubernetes names its schemas."""
    return full_name.replace("k8s.io.", "io.k8s.", 1)


def _ref(full_name: str) -> JSON:
    return {"allOf": [{"$ref": f"#/components/schemas/{_name(full_name)}"}]}


def _field(field: FieldDescriptor, schemas: JSON) -> JSON:
    entry = field.message_type
    if entry is not None and entry.GetOptions().map_entry:
        return {
            "type": "object",
            "additionalProperties": _single(entry.fields_by_name["value"], schemas),
        }
    if field.is_repeated:
        return {"type": "array", "items": _single(field, schemas)}
    return _single(field, schemas)


def _single(field: FieldDescriptor, schemas: JSON) -> JSON:
    if field.message_type is None:
        return dict(_SCALARS.get(field.type, {"type": "integer", "format": "int64"}))
    name = field.message_type.full_name
    if name in _SPECIAL:
        return dict(_SPECIAL[name])
    _message(field.message_type, schemas)
    return _ref(name)


def _message(descriptor: Descriptor, schemas: JSON) -> None:
    """Add the schema of a message, and of every message it holds, to `schemas`."""
    name = _name(descriptor.full_name)
    if name in schemas:
        return
    schemas[name] = {}  # placed first: a message that holds itself ends here
    properties = {f.name: _field(f, schemas) for f in descriptor.fields}
    schemas[name] = {"type": "object", "properties": properties}


def _gvk(kind: ResourceType) -> JSON:
    return {
        "x-kubernetes-group-version-kind": [
            {"group": kind.group, "version": kind.version, "kind": kind.kind}
        ]
    }


def _custom(kind: ResourceType, schemas: JSON) -> None:
    schema = dict(kind.schema or {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    properties = dict(schema.get("properties") or {})
    properties.setdefault("apiVersion", {"type": "string"})
    properties.setdefault("kind", {"type": "string"})
    properties["metadata"] = _ref(f"{_META}.ObjectMeta")
    _message(descriptor_pool.Default().FindMessageTypeByName(f"{_META}.ObjectMeta"), schemas)
    group = ".".join(reversed(kind.group.split(".")))
    schemas[f"{group}.{kind.version}.{kind.kind}"] = {
        **schema,
        "properties": properties,
        **_gvk(kind),
    }


def _builtin(kind: ResourceType, schemas: JSON) -> None:
    group = kind.group.split(".")[0] or "core"
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(
            f"k8s.io.api.{group}.{kind.version}.{kind.kind}"
        )
    except KeyError:
        descriptor = None
    name = _name(f"k8s.io.api.{group}.{kind.version}.{kind.kind}")
    if descriptor is not None:
        _message(descriptor, schemas)
    base = schemas.get(name) or {"type": "object", "properties": {}}
    properties = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}}
    schemas[name] = {
        **base,
        "description": PARTIAL.format(kind=kind.kind),
        "properties": {**properties, **base["properties"]},
        **_gvk(kind),
    }


def component_schemas(kinds: list[ResourceType]) -> JSON:
    """The `components.schemas` of one group version's OpenAPI v3 document."""
    schemas: JSON = {}
    for kind in kinds:
        if kind.custom:
            _custom(kind, schemas)
        else:
            _builtin(kind, schemas)
    return schemas
