"""The akri.sh/v0 models: wire round trips, defaults, metadata, new Instances, conditions."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from akri.api import (
    Condition,
    ConditionType,
    Configuration,
    ConfigurationSpec,
    ConfigurationStatus,
    DiscoveryHandlerInfo,
    Instance,
    ObjectMeta,
    new_instance,
    set_condition,
)
from akri.naming import API_VERSION, LABEL_CONFIGURATION, instance_name

EXAMPLES = sorted((Path(__file__).parents[2] / "crds" / "examples").glob("*.yaml"))
T0 = datetime(2025, 1, 1, tzinfo=UTC)
T1 = datetime(2025, 1, 2, tzinfo=UTC)


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def contained(part: Any, whole: Any) -> bool:
    """Whether every key and value of `part` is in `whole` (lists compared item by item)."""
    if isinstance(part, dict):
        return isinstance(whole, dict) and all(
            k in whole and contained(v, whole[k]) for k, v in part.items()
        )
    if isinstance(part, list):
        return (
            isinstance(whole, list)
            and len(part) == len(whole)
            and all(contained(p, w) for p, w in zip(part, whole, strict=True))
        )
    return bool(part == whole)


def configuration(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": "cfg", "namespace": "ns", "uid": "u-1"},
        "spec": {"discoveryHandler": {"name": "debugEcho"}, **spec},
    }


def test_the_five_examples_are_there() -> None:
    assert [p.stem for p in EXAMPLES] == ["debugEcho", "mdns", "onvif", "opcua", "udev"]


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_round_trip_through_the_models(path: Path) -> None:
    data = load(path)
    parsed = Configuration.from_wire(data)
    wire = parsed.to_wire()
    assert contained(data, wire), "the wire form lost or changed something the example said"
    assert Configuration.from_wire(wire) == parsed
    yaml.safe_load(parsed.spec.discovery_handler.discovery_details)  # details are YAML


def test_debug_echo_example_is_what_the_brief_promises() -> None:
    spec = Configuration.from_wire(load(EXAMPLES[0])).spec
    assert yaml.safe_load(spec.discovery_handler.discovery_details) == {
        "descriptions": ["foo0", "foo1"]
    }
    assert spec.capacity == 2
    assert spec.broker_spec is not None
    assert spec.broker_spec.broker_pod_spec is not None
    limits = spec.broker_spec.broker_pod_spec["containers"][0]["resources"]["limits"]
    assert limits == {"{{PLACEHOLDER}}": "1"}
    assert spec.instance_service_spec is not None


def test_defaults_are_filled_and_written() -> None:
    parsed = Configuration.from_wire(configuration())
    assert parsed.spec.capacity == 1
    assert parsed.spec.unique_devices is True
    assert parsed.spec.discovery_handler.discovery_details == ""
    wire = parsed.to_wire()["spec"]
    assert wire["capacity"] == 1
    assert wire["uniqueDevices"] is True
    assert "brokerSpec" not in wire, "unset optional fields stay off the wire"


def test_python_code_uses_snake_case_and_the_wire_gets_camel_case() -> None:
    built = Configuration(
        metadata=ObjectMeta(name="cfg", resource_version="7"),
        spec=ConfigurationSpec(
            discovery_handler=DiscoveryHandlerInfo(name="udev", discovery_details="udevRules: []"),
            unique_devices=False,
        ),
    )
    wire = built.to_wire()
    assert wire["apiVersion"] == API_VERSION
    assert wire["kind"] == "Configuration"
    assert wire["metadata"]["resourceVersion"] == "7"
    assert wire["spec"]["uniqueDevices"] is False
    assert wire["spec"]["discoveryHandler"] == {
        "name": "udev",
        "discoveryDetails": "udevRules: []",
        "discoveryProperties": [],
    }


def test_unknown_metadata_is_kept_and_known_metadata_is_typed() -> None:
    data = configuration()
    data["metadata"] |= {
        "creationTimestamp": "2025-01-01T00:00:00Z",
        "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
        "deletionTimestamp": "2025-01-02T00:00:00Z",
        "ownerReferences": [
            {"apiVersion": "v1", "kind": "Thing", "name": "t", "uid": "u", "extra": 1}
        ],
    }
    parsed = Configuration.from_wire(data)
    assert parsed.metadata.deletion_timestamp == T1
    assert parsed.metadata.owner_references[0].kind == "Thing"
    wire = parsed.to_wire()["metadata"]
    assert wire["creationTimestamp"] == "2025-01-01T00:00:00Z"
    assert wire["managedFields"] == [{"manager": "kubectl", "operation": "Apply"}]
    assert wire["ownerReferences"][0]["extra"] == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("apiVersion", "akri.sh/v1", "apiVersion must be akri.sh/v0"),
        ("kind", "Instance", "Input should be 'Configuration'"),
    ],
)
def test_other_versions_and_kinds_are_refused(field: str, value: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Configuration.from_wire(configuration() | {field: value})


def test_status_is_optional_and_parsed_with_its_conditions() -> None:
    assert Configuration.from_wire(configuration()).status is None
    data = configuration() | {
        "status": {
            "observedGeneration": 3,
            "instanceCount": 2,
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "DevicesFound",
                    "lastTransitionTime": "2025-01-01T00:00:00Z",
                }
            ],
        }
    }
    status = Configuration.from_wire(data).status
    assert status is not None
    assert status.instance_count == 2
    ready = status.condition(ConditionType.READY)
    assert ready is not None
    assert ready.last_transition_time == T0
    assert status.condition(ConditionType.HANDLER_UNAVAILABLE) is None


def condition(type: str, status: str, at: datetime, reason: str = "Why") -> Condition:
    return Condition.model_validate(
        {"type": type, "status": status, "reason": reason, "lastTransitionTime": at}
    )


def test_set_condition_keeps_the_transition_time_while_the_status_holds() -> None:
    old = [condition("Ready", "False", T0), condition("InvalidName", "True", T0)]
    same = set_condition(old, condition("Ready", "False", T1, reason="StillNothing"))
    assert [c.type for c in same] == ["Ready", "InvalidName"]
    assert same[0].last_transition_time == T0
    assert same[0].reason == "StillNothing"
    flipped = set_condition(old, condition("Ready", "True", T1))
    assert flipped[0].last_transition_time == T1
    added = set_condition(old, condition("HandlerUnavailable", "True", T1))
    assert [c.type for c in added] == ["Ready", "InvalidName", "HandlerUnavailable"]
    assert old[0].last_transition_time == T0, "the input is not modified"


def test_condition_types_are_the_names_the_components_share() -> None:
    assert {t.value for t in ConditionType} == {
        "Ready",
        "HandlerUnavailable",
        "InvalidDetails",
        "InvalidProperties",
        "InvalidName",
        "InvalidBrokerSpec",
        "InvalidConfiguration",
        "PluginUnavailable",
        "WriteRefused",
        "ControllerWriteRefused",
        "RefusedHostPath",
    }
    assert ConfigurationStatus().conditions == []


def test_instance_parses_akri_style_objects() -> None:
    data = {
        "apiVersion": API_VERSION,
        "kind": "Instance",
        "metadata": {"name": "cfg-8120fe", "namespace": "default", "finalizers": ["node-a"]},
        "spec": {
            "configurationName": "cfg",
            "capacity": 2,
            "shared": True,
            "nodes": ["node-a", "node-b"],
            "brokerProperties": {"DEBUG_ECHO_DESCRIPTION": "foo0"},
            "deviceUsage": {"cfg-8120fe-0": "node-a", "cfg-8120fe-1": "C:cfg-0:node-b"},
        },
    }
    parsed = Instance.from_wire(data)
    assert parsed.spec.device_usage["cfg-8120fe-1"] == "C:cfg-0:node-b"
    assert contained(data, parsed.to_wire())
    assert Instance.from_wire(parsed.to_wire()) == parsed


def test_instance_nodes_are_a_set() -> None:
    data = {"kind": "Instance", "spec": {"configurationName": "cfg", "nodes": ["a", "a"]}}
    with pytest.raises(ValidationError, match="nodes must not repeat a node"):
        Instance.from_wire(data)


def test_new_shared_instance_is_owned_labelled_and_free() -> None:
    cfg = Configuration.from_wire(configuration(capacity=2, brokerProperties={"K": "config"}))
    instance = new_instance(cfg, "foo0", "node-a", shared=True, properties={"K": "d", "P": "p"})
    assert instance.metadata.name == "cfg-8120fe"
    assert instance.metadata.namespace == "ns"
    assert instance.metadata.labels == {LABEL_CONFIGURATION: "cfg"}
    assert instance.spec.nodes == ["node-a"]
    assert instance.spec.capacity == 2
    assert instance.spec.shared is True
    assert instance.spec.broker_properties == {"K": "config", "P": "p"}, "the Configuration wins"
    assert instance.spec.device_usage == {"cfg-8120fe-0": "", "cfg-8120fe-1": ""}
    assert instance.to_wire()["metadata"]["ownerReferences"] == [
        {
            "apiVersion": API_VERSION,
            "kind": "Configuration",
            "name": "cfg",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_new_local_instance_is_named_per_node() -> None:
    cfg = Configuration.from_wire(configuration())
    instance = new_instance(cfg, "foo0", "node-a", shared=False, properties={})
    assert instance.metadata.name == instance_name("cfg", "foo0", "node-a") != "cfg-8120fe"
    assert instance.spec.shared is False


def test_an_instance_needs_a_stored_configuration() -> None:
    data = configuration()
    del data["metadata"]["uid"]
    with pytest.raises(ValueError, match="needs a name and a uid"):
        new_instance(Configuration.from_wire(data), "foo0", "n", shared=True, properties={})
