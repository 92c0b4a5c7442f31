"""CRD validation rules (CEL) as the emulator applies them on create and update."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from akri.naming import MAX_CONFIGURATION_NAME
from akri.sim.apiserver import ApiServer, cel_rules, errors
from akri.sim.apiserver.operations import Operations
from akri.sim.apiserver.resources import ResourceType
from tests.conformance.support import GADGET_CRD, GROUP, gadget

ROOT = Path(__file__).resolve().parents[2]


def serve(*definitions: dict[str, Any]) -> Operations:
    operations = ApiServer().operations
    crds = operations.kind("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    for definition in definitions:
        operations.create(crds, None, copy.deepcopy(definition))
    return operations


def refusal(call: Any) -> str:
    with pytest.raises(errors.ApiError) as refused:
        call()
    assert refused.value.code == 422
    return str(refused.value.status["message"])


@pytest.fixture
def gadgets() -> tuple[Operations, ResourceType]:
    operations = serve(GADGET_CRD)
    return operations, operations.kind(GROUP, "v1", "gadgets")


def test_rules_refuse_on_create_in_the_api_servers_words(
    gadgets: tuple[Operations, ResourceType],
) -> None:
    ops, kind = gadgets
    ops.create(kind, "default", gadget("ok", code="abc", ports=[1, 2]))
    assert refusal(lambda: ops.create(kind, "default", gadget("g", min=3))) == (
        'Gadget.conformance.akri.sh "g" is invalid: spec: Invalid value: min must not exceed max'
    )
    assert refusal(lambda: ops.create(kind, "default", gadget("g", code="abcd"))) == (
        'Gadget.conformance.akri.sh "g" is invalid: spec.code: Invalid value: "abcd": '
        "failed rule: self.size() <= 3"
    )
    assert refusal(lambda: ops.create(kind, "default", gadget("g", ports=[1, 0]))) == (
        'Gadget.conformance.akri.sh "g" is invalid: spec.ports[1]: Invalid value: 0: '
        "ports are positive"
    )


def test_transition_rules_compare_with_the_stored_object(
    gadgets: tuple[Operations, ResourceType],
) -> None:
    ops, kind = gadgets
    stored = ops.create(kind, "default", gadget("g"))  # no oldSelf on create: not evaluated
    changed = copy.deepcopy(stored)
    changed["spec"]["mode"] = "b"
    assert refusal(lambda: ops.update(kind, "default", "g", changed)) == (
        'Gadget.conformance.akri.sh "g" is invalid: spec.mode: Invalid value: "b": '
        "mode is immutable"
    )
    changed["spec"].update(mode="a", max=5)
    assert ops.update(kind, "default", "g", changed)["spec"]["max"] == 5


def crd_documents() -> list[dict[str, Any]]:
    return [yaml.safe_load(p.read_text()) for p in sorted((ROOT / "crds").glob("*.yaml"))]


def crd_rules(node: Any) -> dict[str, str]:
    """Every CEL rule under `node`, with its message."""
    found: dict[str, str] = {}
    if isinstance(node, list):
        for item in node:
            found |= crd_rules(item)
    elif isinstance(node, dict):
        found |= {r["rule"]: r["message"] for r in node.get("x-kubernetes-validations") or []}
        for value in node.values():
            found |= crd_rules(value)
    return found


def example() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (ROOT / "crds" / "examples" / "debugEcho.yaml").read_text()
    )
    return data


def with_property(prop: dict[str, Any]) -> dict[str, Any]:
    data = example()
    data["spec"]["discoveryHandler"]["discoveryProperties"] = [prop]
    return data


def refused_configurations() -> dict[str, dict[str, Any]]:
    """One Configuration that breaks each rule of crds/, by the rule it breaks."""
    both_brokers, no_handler_name, long_name = example(), example(), example()
    long_name["metadata"]["name"] = "c" * (MAX_CONFIGURATION_NAME + 1)
    both_brokers["spec"]["brokerSpec"]["brokerJobSpec"] = {}
    no_handler_name["spec"]["discoveryHandler"]["name"] = "debug echo"
    ref = {"name": "s", "key": "k"}
    return {
        "has(self.brokerPodSpec) != has(self.brokerJobSpec)": both_brokers,
        "has(self.secretKeyRef) != has(self.configMapKeyRef)": with_property(
            {"name": "x", "valueFrom": {"secretKeyRef": ref, "configMapKeyRef": ref}}
        ),
        "has(self.value) != has(self.valueFrom)": with_property({"name": "x"}),
        "self.matches('^[A-Za-z][A-Za-z0-9_-]*$')": no_handler_name,
        f"size(self.metadata.name) <= {MAX_CONFIGURATION_NAME}": long_name,
    }


def test_every_rule_in_crds_accepts_the_examples_and_refuses_a_breach() -> None:
    ops = serve(*crd_documents())
    configurations = ops.kind("akri.sh", "v0", "configurations")
    refused, messages = refused_configurations(), crd_rules(crd_documents())
    assert sorted(messages) == sorted(refused), "a rule of crds/ without a refused example"
    for path in sorted((ROOT / "crds" / "examples").glob("*.yaml")):
        ops.create(configurations, "default", yaml.safe_load(path.read_text()))
    for rule, configuration in refused.items():
        on_name = rule.startswith("size(self.metadata.name)")
        name = configuration["metadata"]["name"] if on_name else "breach"
        configuration["metadata"]["name"] = name
        message = refusal(lambda c=configuration: ops.create(configurations, "default", c))
        field = "" if on_name else "spec."
        assert message.startswith(f'Configuration.akri.sh "{name}" is invalid: {field}'), rule
        assert message.endswith(f": {messages[rule]}"), message


def test_rules_are_checked_along_the_branches_that_lead_to_them() -> None:
    """Each served version keeps only its schema's branches with rules: an Instance (no rules)
    is not walked at all, and the trimmed Configuration schema finds every breach the full one
    does, in the same words."""
    ops = serve(*crd_documents())
    instances = ops.kind("akri.sh", "v0", "instances")
    configurations = ops.kind("akri.sh", "v0", "configurations")
    assert instances.schema is not None
    assert instances.rules is None
    full, trimmed = configurations.schema, configurations.rules
    assert full is not None
    assert trimmed is not None
    assert crd_rules(trimmed) == crd_rules(full)
    assert trimmed["properties"]["metadata"] == {}
    assert trimmed["properties"]["spec"]["properties"]["capacity"] == {}
    for configuration in [example(), *refused_configurations().values()]:
        found = cel_rules.violations(trimmed, configuration)
        assert found == cel_rules.violations(full, configuration)
        assert bool(found) == (configuration != example())
