"""Pure builders: broker Pods, Jobs and Services from a Configuration and an Instance."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from akri import naming
from akri.api import Configuration, Instance, new_instance
from akri.controller.builders import (
    SPEC_HASH_ANNOTATION,
    BrokerSpecError,
    broker_job,
    broker_pod,
    built_hash,
    claim_placeholder,
    configuration_service,
    instance_service,
    is_running,
    pin_to_node,
    replace_placeholder,
    updated_service,
)

RESOURCE = "akri.sh/cam-8120fe"


def configuration(**spec: Any) -> Configuration:
    return Configuration.from_wire(
        {
            "apiVersion": naming.API_VERSION,
            "kind": "Configuration",
            "metadata": {"name": "cam", "namespace": "ns", "uid": "cfg-uid", "generation": 3},
            "spec": {"discoveryHandler": {"name": "debugEcho"}, **spec},
        }
    )


def container(name: str = "broker", **resources: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "image": "nginx", "resources": resources}


POD_SPEC = {
    "containers": [container(limits={naming.PLACEHOLDER: "1"}, requests={naming.PLACEHOLDER: "1"})]
}


def instance(cfg: Configuration, *, shared: bool = True, **properties: str) -> Instance:
    made = new_instance(cfg, "foo0", "node-a", shared=shared, properties=properties)
    made.metadata.uid = "inst-uid"
    return made


def test_placeholder_is_replaced_in_containers_and_init_containers_keeping_quantities() -> None:
    spec = {
        "initContainers": [container("init", limits={naming.PLACEHOLDER: "2", "cpu": "1"})],
        "containers": [
            container(requests={naming.PLACEHOLDER: "1"}, limits={naming.PLACEHOLDER: "1"}),
            container("sidecar"),
            {"name": "bare", "image": "x"},
        ],
    }
    original = copy.deepcopy(spec)
    replaced = replace_placeholder(spec, RESOURCE)
    assert replaced["initContainers"][0]["resources"]["limits"] == {RESOURCE: "2", "cpu": "1"}
    assert replaced["containers"][0]["resources"] == {
        "requests": {RESOURCE: "1"},
        "limits": {RESOURCE: "1"},
    }
    assert replaced["containers"][1]["resources"] == {}
    assert spec == original  # the Configuration's own spec is never changed


def test_dra_mode_turns_placeholder_slots_into_claims_of_the_instance_template() -> None:
    """App containers get slots of their own, init containers reuse the first ones (as the
    kubelet reuses devices), so the pod claims max(sum of apps, largest init) slots."""
    spec = {
        "initContainers": [container("init", limits={naming.PLACEHOLDER: "3", "cpu": "1"})],
        "containers": [
            container(requests={naming.PLACEHOLDER: "1"}, limits={naming.PLACEHOLDER: "1"}),
            container("sidecar", limits={"memory": "1Gi"}),
            {"name": "second", "image": "x", "resources": {"limits": {naming.PLACEHOLDER: 1}}},
        ],
        "resourceClaims": [{"name": "mine", "resourceClaimName": "other"}],
    }
    original = copy.deepcopy(spec)
    claimed = claim_placeholder(spec, "cam-8120fe")
    assert claimed["initContainers"][0]["resources"] == {
        "limits": {"cpu": "1"},
        "claims": [{"name": "akri-slot-0"}, {"name": "akri-slot-1"}, {"name": "akri-slot-2"}],
    }
    assert claimed["containers"][0]["resources"] == {"claims": [{"name": "akri-slot-0"}]}
    assert claimed["containers"][1]["resources"] == {"limits": {"memory": "1Gi"}}
    assert claimed["containers"][2]["resources"] == {"claims": [{"name": "akri-slot-1"}]}
    assert claimed["resourceClaims"] == [
        {"name": "mine", "resourceClaimName": "other"},
        *({"name": f"akri-slot-{k}", "resourceClaimTemplateName": "cam-8120fe"} for k in range(3)),
    ]
    assert spec == original


def test_dra_mode_broker_pod_and_job_claim_slots_and_differ_from_device_plugin_mode() -> None:
    cfg = configuration(brokerSpec={"brokerPodSpec": POD_SPEC})
    inst = instance(cfg)
    pod = broker_pod(cfg, inst, "node-a", dra=True)
    assert pod is not None
    assert pod["spec"]["resourceClaims"] == [
        {"name": "akri-slot-0", "resourceClaimTemplateName": inst.metadata.name}
    ]
    assert RESOURCE not in str(pod["spec"])
    assert built_hash(pod) != built_hash(broker_pod(cfg, inst, "node-a") or {})
    job_cfg = configuration(brokerSpec={"brokerJobSpec": {"template": {"spec": POD_SPEC}}})
    job = broker_job(job_cfg, instance(job_cfg), dra=True)
    assert job is not None
    assert job["spec"]["template"]["spec"]["resourceClaims"][0]["name"] == "akri-slot-0"


@pytest.mark.parametrize("quantity", ["0", "1.5", "-1", "lots"])
def test_dra_mode_refuses_slot_counts_that_are_not_positive_integers(quantity: str) -> None:
    spec = {"containers": [container(limits={naming.PLACEHOLDER: quantity})]}
    with pytest.raises(BrokerSpecError, match="not a positive integer"):
        claim_placeholder(spec, "cam-8120fe")


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ({}, "non-empty list of containers"),
        ({"containers": []}, "non-empty list of containers"),
        ({"containers": "broker"}, "non-empty list of containers"),
        ({"containers": ["broker"]}, r"containers\[0\] must be an object"),
        ({"containers": [{"name": "b", "resources": []}]}, "resources must be an object"),
        ({"containers": [{"name": "b", "resources": {"limits": []}}]}, "limits must be a map"),
        ({"containers": [{"name": "b"}], "initContainers": {}}, "initContainers must be a list"),
    ],
)
def test_misshapen_pod_specs_are_refused(spec: dict[str, Any], problem: str) -> None:
    with pytest.raises(BrokerSpecError, match=problem):
        replace_placeholder(spec, RESOURCE)


def test_pinning_adds_the_node_to_every_existing_term() -> None:
    spec: dict[str, Any] = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                        {"matchFields": [{"key": "x", "operator": "Exists"}]},
                    ]
                }
            }
        }
    }
    pinned = pin_to_node(spec, "node-a")
    terms = pinned["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    node = {"key": "metadata.name", "operator": "In", "values": ["node-a"]}
    assert terms[0]["matchFields"] == [node]
    assert terms[0]["matchExpressions"][0]["key"] == "zone"
    assert terms[1]["matchFields"] == [{"key": "x", "operator": "Exists"}, node]


def test_broker_pod_of_a_shared_instance() -> None:
    cfg = configuration(brokerSpec={"brokerPodSpec": POD_SPEC})
    inst = instance(cfg)
    name = inst.metadata.name or ""
    pod = broker_pod(cfg, inst, "node-b")
    assert pod is not None
    metadata = pod["metadata"]
    assert metadata["name"] == f"{name}-node-b-pod"
    assert metadata["namespace"] == "ns"
    assert metadata["labels"] == {
        "akri.sh/configuration": "cam",
        "akri.sh/instance": name,
        "akri.sh/target-node": "node-b",
        "controller": "akri.sh",
    }
    assert metadata["ownerReferences"] == [
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "name": name,
            "uid": "inst-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    terms = pod["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert terms == {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-b"]}]}
        ]
    }
    assert pod["spec"]["containers"][0]["resources"]["limits"] == {f"akri.sh/{name}": "1"}
    assert built_hash(pod) == metadata["annotations"][SPEC_HASH_ANNOTATION]


def test_broker_pod_of_a_local_instance_is_named_without_the_node() -> None:
    cfg = configuration(brokerSpec={"brokerPodSpec": POD_SPEC})
    inst = instance(cfg, shared=False)
    pod = broker_pod(cfg, inst, "node-a")
    assert pod is not None
    assert pod["metadata"]["name"] == f"{inst.metadata.name}-pod"


def test_no_broker_pod_without_a_pod_spec() -> None:
    assert broker_pod(configuration(), instance(configuration()), "node-a") is None
    cfg = configuration(brokerSpec={"brokerJobSpec": {"template": {"spec": POD_SPEC}}})
    assert broker_pod(cfg, instance(cfg), "node-a") is None
    assert broker_job(configuration(), instance(configuration())) is None


def test_digest_changes_with_spec_or_properties_but_not_key_order() -> None:
    cfg = configuration(brokerSpec={"brokerPodSpec": POD_SPEC})
    base = built_hash(broker_pod(cfg, instance(cfg), "n") or {})
    assert built_hash(broker_pod(cfg, instance(cfg, A="1"), "n") or {}) != base
    other = copy.deepcopy(POD_SPEC)
    other["containers"][0]["image"] = "nginx:2"
    changed = configuration(brokerSpec={"brokerPodSpec": other})
    assert built_hash(broker_pod(changed, instance(changed), "n") or {}) != base
    reordered = {"containers": [dict(reversed(list(POD_SPEC["containers"][0].items())))]}
    same = configuration(brokerSpec={"brokerPodSpec": reordered})
    assert built_hash(broker_pod(same, instance(same), "n") or {}) == base


def test_broker_job_is_named_by_generation_and_labels_its_pods() -> None:
    cfg = configuration(
        brokerSpec={"brokerJobSpec": {"template": {"spec": POD_SPEC}, "parallelism": 2}}
    )
    inst = instance(cfg)
    name = inst.metadata.name or ""
    job = broker_job(cfg, inst)
    assert job is not None
    assert job["metadata"]["name"] == f"{name}-3-job"
    assert naming.LABEL_TARGET_NODE not in job["metadata"]["labels"]
    template = job["spec"]["template"]
    assert template["metadata"]["labels"][naming.LABEL_INSTANCE] == name
    assert template["spec"]["containers"][0]["resources"]["requests"] == {f"akri.sh/{name}": "1"}
    assert job["spec"]["parallelism"] == 2
    with pytest.raises(BrokerSpecError, match="template"):
        broker_job(configuration(brokerSpec={"brokerJobSpec": {"parallelism": 1}}), inst)


def test_services_select_brokers_and_are_owned() -> None:
    spec = {"ports": [{"port": 80}], "selector": {"app": "x"}}
    cfg = configuration(instanceServiceSpec=spec, configurationServiceSpec=spec)
    inst = instance(cfg)
    name = inst.metadata.name or ""
    per_instance = instance_service(cfg, inst)
    assert per_instance is not None
    assert per_instance["metadata"]["name"] == f"{name}-svc"
    assert per_instance["spec"]["selector"] == {
        "app": "x",
        "akri.sh/instance": name,
        "controller": "akri.sh",
    }
    assert per_instance["metadata"]["ownerReferences"][0]["uid"] == "inst-uid"
    shared = configuration_service(cfg)
    assert shared is not None
    assert shared["metadata"]["name"] == "cam-svc"
    assert shared["spec"]["selector"]["akri.sh/configuration"] == "cam"
    assert shared["metadata"]["ownerReferences"][0]["uid"] == "cfg-uid"
    assert instance_service(configuration(), inst) is None
    assert configuration_service(configuration()) is None
    with pytest.raises(BrokerSpecError, match="selector"):
        configuration_service(configuration(configurationServiceSpec={"selector": ["x"]}))


def test_service_update_keeps_allocated_addresses() -> None:
    cfg = configuration(instanceServiceSpec={"ports": [{"port": 81}]})
    desired = instance_service(cfg, instance(cfg))
    assert desired is not None
    existing = {
        "metadata": {"name": "s", "resourceVersion": "7", "uid": "u"},
        "spec": {"clusterIP": "10.96.0.9", "clusterIPs": ["10.96.0.9"], "ports": [{"port": 80}]},
    }
    updated = updated_service(existing, desired)
    assert updated["spec"]["clusterIP"] == "10.96.0.9"
    assert updated["spec"]["ports"] == [{"port": 81}]
    assert updated["metadata"]["resourceVersion"] == "7"
    assert built_hash(updated) == built_hash(desired)


@pytest.mark.parametrize(
    ("status", "deleting", "running"),
    [
        ({"phase": "Running"}, False, True),
        ({"phase": "Running"}, True, False),
        ({"phase": "Pending"}, False, False),
        (None, False, False),
    ],
)
def test_is_running(status: dict[str, str] | None, deleting: bool, running: bool) -> None:
    metadata = {"deletionTimestamp": "2026-01-01T00:00:00Z"} if deleting else {}
    assert is_running({"metadata": metadata, "status": status}) is running
