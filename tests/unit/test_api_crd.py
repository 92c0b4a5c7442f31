"""The generated CRDs: no drift from the models, structural schemas, and the same verdicts as the
models on good and bad Configurations (checked with a small validator that applies the schema the
way the API server does under strict field validation, CEL rules included)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import celpy
import pytest
import yaml
from celpy.adapter import json_to_cel
from pydantic import ValidationError

from akri.api import Configuration, Instance, crd_files, definition
from akri.api.configuration import HANDLER_NAME_MESSAGE, UNIQUE_PROPERTIES_MESSAGE

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "crds" / "examples").glob("*.yaml"))
PYTHON_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "boolean": bool,
    "number": (int, float),
}
# The fields of Kubernetes' JSONSchemaProps we use or could; `$ref`, `anyOf`, `oneOf`, `allOf`,
# `not`, `const` and `definitions` are deliberately absent: structural schemas cannot use them here.
ALLOWED_KEYS = {
    "type", "description", "properties", "required", "items", "additionalProperties", "default",
    "enum", "pattern", "format", "minimum", "maximum", "minLength", "maxLength", "minItems",
    "maxItems", "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-validations",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
}  # fmt: skip
FREE_FORM = {"brokerPodSpec", "brokerJobSpec", "instanceServiceSpec", "configurationServiceSpec"}


def schema_of(model: type[Configuration] | type[Instance]) -> dict[str, Any]:
    schema: dict[str, Any] = definition(model)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def nodes(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from nodes(child, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from nodes(schema[key], f"{path}[]")


@cache
def cel(rule: str) -> celpy.Runner:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def is_a(kind: str, value: Any) -> bool:
    """JSON type check; Python's bool being an int must not make `true` an integer."""
    return isinstance(value, PYTHON_TYPES[kind]) and isinstance(value, bool) == (kind == "boolean")


def k8s_errors(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """What the API server refuses in `value` (unknown fields included, as `kubectl apply` does)."""
    kind = schema["type"]
    if not is_a(kind, value):
        return [f"{path}: must be of type {kind}"]
    errors = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: must be one of {schema['enum']}")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: must match {schema['pattern']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: must be at least {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: must be at most {schema['maximum']}")
    if "minLength" in schema and len(value) < schema["minLength"]:
        errors.append(f"{path}: must not be shorter than {schema['minLength']}")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: must not be longer than {schema['maxLength']}")
    if kind == "object":
        properties = schema.get("properties")
        if properties is not None:
            errors += [f"{path}.{k}: unknown field" for k in value if k not in properties]
            errors += [
                f"{path}.{k}: required" for k in schema.get("required", ()) if k not in value
            ]
            children = {k: properties[k] for k in value if k in properties}
        elif "additionalProperties" in schema:
            children = dict.fromkeys(value, schema["additionalProperties"])
        else:  # metadata, or a free-form object
            children = {}
        for key, child in children.items():
            errors += k8s_errors(child, value[key], f"{path}.{key}")
    for rule in schema.get("x-kubernetes-validations", ()):
        if not cel(rule["rule"]).evaluate({"self": json_to_cel(value)}):
            errors.append(f"{path}: {rule['message']}")
    if kind == "array":
        for i, item in enumerate(value):
            errors += k8s_errors(schema["items"], item, f"{path}[{i}]")
        keys = schema.get("x-kubernetes-list-map-keys")
        identities = [tuple(i.get(k) for k in keys) if keys else i for i in value]
        if schema.get("x-kubernetes-list-type") in ("set", "map") and len(
            {repr(i) for i in identities}
        ) < len(identities):
            errors.append(f"{path}: duplicate entries")
    return errors


@pytest.mark.parametrize("folder", ["crds", "helm/akri/crds"])
def test_checked_in_crds_match_the_models(folder: str) -> None:
    """Both the repository's CRDs and the chart's copies are what the models generate."""
    generated = crd_files()
    on_disk = {p.name: p.read_text() for p in (ROOT / folder).glob("*.yaml")}
    assert set(on_disk) == set(generated), f"{folder}/ holds other files than the generator writes"
    for name, text in generated.items():
        assert on_disk[name] == text, f"{folder}/{name} is stale: run `make crds`"


def test_generation_is_deterministic() -> None:
    assert crd_files() == crd_files()


@pytest.mark.parametrize("model", [Configuration, Instance])
def test_schemas_are_structural(model: type[Configuration] | type[Instance]) -> None:
    for path, node in nodes(schema_of(model)):
        assert set(node) <= ALLOWED_KEYS, f"{path or 'root'}: {set(node) - ALLOWED_KEYS}"
        assert "type" in node, f"{path or 'root'} has no type"
        assert not ("properties" in node and "additionalProperties" in node), path
        assert "nullable" not in node, f"{path}: null is never written, so never allowed"
        if node.get("x-kubernetes-preserve-unknown-fields"):
            assert path.rsplit(".", 1)[-1] in FREE_FORM, f"{path} should be typed"
        if path not in ("", ".metadata") and not path.endswith("[]"):
            assert node.get("description"), f"{path} has no description"
    root = schema_of(model)
    assert root["properties"]["metadata"] == {"type": "object"}, "metadata belongs to Kubernetes"


def test_free_form_specs_keep_their_fields() -> None:
    spec = schema_of(Configuration)["properties"]["spec"]["properties"]
    preserved = [
        path.rsplit(".", 1)[-1]
        for path, node in nodes(schema_of(Configuration))
        if node.get("x-kubernetes-preserve-unknown-fields")
    ]
    assert sorted(preserved) == sorted(FREE_FORM)
    assert spec["brokerProperties"]["additionalProperties"] == {"type": "string"}


def test_schema_carries_defaults_bounds_and_patterns() -> None:
    spec = schema_of(Configuration)["properties"]["spec"]["properties"]
    assert spec["capacity"] | {"description": ""} == {
        "type": "integer",
        "default": 1,
        "minimum": 1,
        "maximum": 1000,
        "description": "",
    }
    assert spec["uniqueDevices"]["default"] is True
    handler = spec["discoveryHandler"]
    assert handler["required"] == ["name"]
    prop = handler["properties"]["discoveryProperties"]["items"]["properties"]["name"]
    assert prop["pattern"] == "^[_A-Za-z][_A-Za-z0-9]*$"
    status = schema_of(Configuration)["properties"]["status"]["properties"]
    assert status["conditions"]["items"]["properties"]["status"]["enum"] == [
        "True",
        "False",
        "Unknown",
    ]
    nodes_ = schema_of(Instance)["properties"]["spec"]["properties"]["nodes"]
    assert nodes_["x-kubernetes-list-type"] == "set"


def test_crd_names_columns_and_subresources() -> None:
    config, instance = (definition(m)["spec"] for m in (Configuration, Instance))
    assert definition(Configuration)["metadata"]["name"] == "configurations.akri.sh"
    assert definition(Instance)["metadata"]["name"] == "instances.akri.sh"
    for spec, short in ((config, "akric"), (instance, "akrii")):
        assert spec["group"] == "akri.sh"
        assert spec["scope"] == "Namespaced"
        assert spec["names"]["shortNames"] == [short]
        assert spec["names"]["categories"] == ["all"]
        (version,) = spec["versions"]
        assert (version["name"], version["served"], version["storage"]) == ("v0", True, True)
    columns = {
        spec["names"]["kind"]: [c["name"] for c in spec["versions"][0]["additionalPrinterColumns"]]
        for spec in (config, instance)
    }
    assert columns == {
        "Configuration": ["Capacity", "Instances", "Ready", "Age"],
        "Instance": ["Config", "Shared", "Nodes", "Age"],
    }
    assert config["versions"][0]["subresources"] == {"status": {}}
    assert instance["versions"][0]["subresources"] == {"status": {}}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_are_valid_for_the_api_server(path: Path) -> None:
    assert k8s_errors(schema_of(Configuration), yaml.safe_load(path.read_text())) == []


def debug_echo() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (ROOT / "crds" / "examples" / "debugEcho.yaml").read_text()
    )
    return data


def with_property(prop: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda spec: spec["discoveryHandler"].__setitem__("discoveryProperties", [prop])


SECRET = {"name": "s", "key": "k"}
ONE_VALUE = "exactly one of value or valueFrom"
ONE_REF = "exactly one of secretKeyRef or configMapKeyRef"
ONE_BROKER = "exactly one of brokerPodSpec or brokerJobSpec"
BAD_SPECS = [
    pytest.param(lambda s: s.update(capacity=0), "greater than or equal to 1", id="capacity 0"),
    pytest.param(lambda s: s.update(capacity="2"), "valid integer", id="capacity a string"),
    pytest.param(
        lambda s: s.update(capacity=1_000_000), "less than or equal to 1000", id="capacity 1e6"
    ),
    pytest.param(lambda s: s.update(capactiy=2), "capactiy\n  Extra inputs", id="unknown field"),
    pytest.param(
        lambda s: s["discoveryHandler"].pop("name"), "name\n  Field required", id="no handler"
    ),
    pytest.param(
        lambda s: s.update(brokerProperties={"A": 1}), "valid string", id="non-string property"
    ),
    pytest.param(
        with_property({"name": "1x", "value": "v"}), "should match pattern", id="property name"
    ),
    pytest.param(
        with_property({"name": "x", "value": "v", "valueFrom": {"secretKeyRef": SECRET}}),
        ONE_VALUE,
        id="value and valueFrom",
    ),
    pytest.param(with_property({"name": "x"}), ONE_VALUE, id="neither value nor valueFrom"),
    pytest.param(
        with_property(
            {"name": "x", "valueFrom": {"secretKeyRef": SECRET, "configMapKeyRef": SECRET}}
        ),
        ONE_REF,
        id="both key refs",
    ),
    pytest.param(with_property({"name": "x", "valueFrom": {}}), ONE_REF, id="no key ref"),
    pytest.param(
        with_property({"name": "x", "valueFrom": {"secretKeyRef": {"name": "s"}}}),
        "key\n  Field required",
        id="key ref without key",
    ),
    pytest.param(
        lambda s: s["brokerSpec"].update(brokerJobSpec={}), ONE_BROKER, id="both broker kinds"
    ),
    pytest.param(lambda s: s.update(brokerSpec={}), ONE_BROKER, id="no broker kind"),
    pytest.param(
        lambda s: s["discoveryHandler"].update(name="debug echo"),
        HANDLER_NAME_MESSAGE,
        id="handler name with a space",
    ),
    pytest.param(
        lambda s: s["discoveryHandler"].update(name=""), HANDLER_NAME_MESSAGE, id="no handler name"
    ),
    pytest.param(
        lambda s: s["discoveryHandler"].update(name="d" * 64),
        "at most 63 characters",
        id="handler name too long",
    ),
    pytest.param(
        lambda s: s["discoveryHandler"].update(
            discoveryProperties=[{"name": "x", "value": "1"}, {"name": "x", "value": "2"}]
        ),
        UNIQUE_PROPERTIES_MESSAGE,
        id="duplicate property names",
    ),
]
CEL_MESSAGES = {ONE_VALUE, ONE_REF, ONE_BROKER, HANDLER_NAME_MESSAGE}


@pytest.mark.parametrize(("mutate", "message"), BAD_SPECS)
def test_models_and_api_server_refuse_the_same_configurations(
    mutate: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = debug_echo()
    mutate(data["spec"])
    with pytest.raises(ValidationError) as refused:
        Configuration.from_wire(data)
    assert message in str(refused.value)
    errors = k8s_errors(schema_of(Configuration), data)
    assert errors, "the CRD schema lets through what the models refuse"
    if message in CEL_MESSAGES:
        assert any(message in e for e in errors), "CEL and the models speak alike"


def test_validator_sees_instance_rules() -> None:
    good: dict[str, Any] = {"apiVersion": "akri.sh/v0", "kind": "Instance"}
    good["spec"] = {"configurationName": "c", "nodes": ["a", "b"]}
    assert k8s_errors(schema_of(Instance), good) == []
    bad = copy.deepcopy(good)
    bad["spec"] |= {"nodes": ["a", "a"], "capacity": 0, "shared": "yes"}
    assert len(k8s_errors(schema_of(Instance), bad)) == 3
