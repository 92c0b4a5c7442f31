"""CustomResourceDefinitions generated from the models, so the API server validates what we parse.

Pydantic's JSON schema becomes a Kubernetes *structural* schema: references inlined, optional
fields plain (absent rather than null), free-form specs marked to keep unknown fields, and the
models' exactly-one rules carried as CEL validations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from akri.api.configuration import Configuration
from akri.api.instance import Instance
from akri.api.wire import Resource
from akri.naming import GROUP, VERSION

HEADER = "# Generated from akri.api by `akri crds`; edit the models, not this file.\n"

_AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
_COLUMNS: Mapping[type[Resource], list[dict[str, str]]] = {
    Configuration: [
        {"name": "Capacity", "type": "integer", "jsonPath": ".spec.capacity"},
        {"name": "Instances", "type": "integer", "jsonPath": ".status.instanceCount"},
        {
            "name": "Ready",
            "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status',
        },
        _AGE,
    ],
    Instance: [
        {"name": "Config", "type": "string", "jsonPath": ".spec.configurationName"},
        {"name": "Shared", "type": "boolean", "jsonPath": ".spec.shared"},
        {"name": "Nodes", "type": "string", "jsonPath": ".spec.nodes"},
        _AGE,
    ],
}
_SHORT_NAMES: Mapping[type[Resource], str] = {Configuration: "akric", Instance: "akrii"}


def structural(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """`node` of a pydantic JSON schema as a structural schema node, resolving `$ref`s in `defs`."""
    node = {key: value for key, value in node.items() if key != "title"}
    if ref := node.pop("$ref", None):
        return structural({**defs[ref.removeprefix("#/$defs/")], **node}, defs)
    if branches := node.pop("anyOf", None):
        (branch,) = (b for b in branches if b != {"type": "null"})  # only Optional[X] is allowed
        if "default" in node and node["default"] is None:
            del node["default"]
        return structural({**branch, **node}, defs)
    if "description" in node:
        node["description"] = " ".join(node["description"].split())
    if "properties" in node:
        node["properties"] = {k: structural(v, defs) for k, v in node["properties"].items()}
        node.pop("additionalProperties", None)  # extra="forbid": the API server prunes instead
    values = node.pop("additionalProperties", None)
    if values is True or values == {}:
        node["x-kubernetes-preserve-unknown-fields"] = True
    elif values is not None:
        node["additionalProperties"] = structural(values, defs)
    if "items" in node:
        node["items"] = structural(node["items"], defs)
    return node


def openapi_schema(model: type[Resource]) -> dict[str, Any]:
    """The openAPIV3Schema of a resource; metadata is left to the API server, as it must be."""
    schema = model.model_json_schema(by_alias=True)
    root = structural(schema, schema.get("$defs", {}))
    root.pop("$defs", None)
    root["properties"].update(
        apiVersion={"type": "string", "description": "Group and version of the schema."},
        kind={"type": "string", "description": "Type of the object."},
        metadata={"type": "object"},
    )
    if model.object_rules:
        root["x-kubernetes-validations"] = [
            {"rule": rule, "message": message} for rule, message in model.object_rules
        ]
    return root


def definition(model: type[Resource]) -> dict[str, Any]:
    """The CustomResourceDefinition of `model`."""
    kind = model.model_fields["kind"].default
    version: dict[str, Any] = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": openapi_schema(model)},
        "additionalPrinterColumns": _COLUMNS[model],
    }
    if "status" in model.model_fields:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{model.plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": model.plural,
                "singular": kind.lower(),
                "shortNames": [_SHORT_NAMES[model]],
                "categories": ["all"],
            },
            "versions": [version],
        },
    }


class _Dumper(yaml.SafeDumper):
    """Writes repeated parts (shared `$defs`) out in full: anchors would puzzle a human reader."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


MODELS: tuple[type[Resource], ...] = (Configuration, Instance)


def crd_definitions() -> list[dict[str, Any]]:
    """Every CRD as a document, e.g. to register with an API server without any file."""
    return [definition(model) for model in MODELS]


def crd_files() -> dict[str, str]:
    """File name to YAML text of every CRD, deterministic so checked-in copies can be compared."""
    return {
        f"{GROUP}_{model.plural}.yaml": HEADER
        + yaml.dump(definition(model), Dumper=_Dumper, sort_keys=True)
        for model in MODELS
    }
