"""Pure: resolve a Configuration's discoveryProperties to the bytes its handler receives.

The rules of docs/design.md §3: `value` wins over `valueFrom`; a Secret's `data` is base64 (its
`stringData` is write-only and never read back); a ConfigMap key comes from `data`, then from
`binaryData` (base64); the namespace defaults to the Configuration's; a missing object or key is
skipped when optional and otherwise an `InvalidProperties` error naming property and source.
Reading the objects is the caller's job (see `kube_properties`).

A selector may name a namespace (Akri's field), but only the Configuration's own: the agent may
read Secrets cluster-wide, and whoever may write a Configuration in one namespace must not
reach another's through it. The refusal comes before any read and is worded the same whether
the object exists or not (docs/security.md, "Secrets and ConfigMaps").
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from akri.api import DiscoveryProperty
from akri.discovery.model import InvalidProperties

Values = Mapping[str, bytes]
"""The decoded key/value pairs of one Secret or ConfigMap."""


@dataclass(frozen=True, order=True)
class Source:
    """A Secret or ConfigMap some property reads from."""

    kind: Literal["ConfigMap", "Secret"]
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Reference:
    """A property whose value is a key of a Source."""

    property: str
    source: Source
    key: str
    optional: bool


def reference(prop: DiscoveryProperty, namespace: str) -> bytes | Reference:
    """The property's literal value, or where to read it from."""
    if prop.value is not None or prop.value_from is None:
        return (prop.value or "").encode()
    secret, config_map = prop.value_from.secret_key_ref, prop.value_from.config_map_key_ref
    selector = secret or config_map
    assert selector is not None  # PropertySource requires exactly one of them
    kind: Literal["ConfigMap", "Secret"] = "Secret" if secret else "ConfigMap"
    if selector.namespace not in (None, namespace):
        raise InvalidProperties(
            f"discovery property {prop.name!r}: a {kind} of namespace {selector.namespace!r} "
            f"refused: a Configuration reads those of its own namespace ({namespace!r}) only"
        )
    source = Source(kind, namespace, selector.name)
    return Reference(prop.name, source, selector.key, selector.optional)


def sources(properties: Iterable[DiscoveryProperty], namespace: str) -> list[Source]:
    """Every object the properties of a Configuration in `namespace` read from, each once, in
    a stable order; InvalidProperties when one names another namespace."""
    refs = (reference(p, namespace) for p in properties)
    return sorted({r.source for r in refs if isinstance(r, Reference)})


def _decode(source: Source, field: str, encoded: Mapping[str, str] | None) -> dict[str, bytes]:
    try:
        return {k: base64.b64decode(v, validate=True) for k, v in (encoded or {}).items()}
    except binascii.Error as error:
        raise InvalidProperties(f"{source} has {field} that is not base64: {error}") from None


def secret_values(source: Source, data: Mapping[str, str] | None) -> dict[str, bytes]:
    return _decode(source, "data", data)


def config_map_values(
    source: Source, data: Mapping[str, str] | None, binary_data: Mapping[str, str] | None
) -> dict[str, bytes]:
    return _decode(source, "binaryData", binary_data) | {
        k: v.encode() for k, v in (data or {}).items()
    }


def resolve(
    properties: Iterable[DiscoveryProperty],
    namespace: str,
    objects: Mapping[Source, Values | None],
) -> dict[str, bytes]:
    """Property name -> value; `objects` holds every needed source (None: it does not exist)."""
    resolved: dict[str, bytes] = {}
    for prop in properties:
        found = reference(prop, namespace)
        if isinstance(found, bytes):
            resolved[prop.name] = found
            continue
        values = objects.get(found.source)
        if values is not None and found.key in values:
            resolved[prop.name] = values[found.key]
        elif not found.optional:
            where = f"{found.source}" if values is None else f"key {found.key!r} in {found.source}"
            raise InvalidProperties(f"discovery property {prop.name!r}: {where} not found")
    return resolved
