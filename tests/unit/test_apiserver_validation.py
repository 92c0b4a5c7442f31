"""The emulator's validation of built-in kinds (akri.sim.apiserver.validation): each rule
refuses in kube-apiserver's words (read from a real 1.36 server) and accepts what the product
writes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from akri.api import Configuration, Instance
from akri.dra.devices import device_class, instance_claim_template, instance_devices
from akri.dra.slices import Pool, plan
from akri.sim.apiserver import errors
from akri.sim.apiserver.validation import (
    admissionregistration,
    batch,
    coordination,
    core,
    field,
    meta,
    names,
    resource,
)

JSON = dict[str, Any]


# ---- messages --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "null"), (True, "true"), (0, "0"), (0.5, "0.5"), ("a", '"a"'), (["v2"], '["v2"]')],
)
def test_bad_values_print_as_go_prints_them(value: Any, shown: str) -> None:
    assert field.go_value(value) == shown


def test_omitted_value_and_detail() -> None:
    assert field.invalid("spec", field.OMIT, "x") == ("spec", "Invalid value: x")
    assert field.required("spec") == ("spec", "Required value")
    assert field.not_supported("t", "Foo", ("B", "A")) == (
        "t",
        'Unsupported value: "Foo": supported values: "B", "A"',
    )


def test_one_cause_alone_several_in_brackets_each_with_its_reason() -> None:
    one = errors.invalid("", "Pod", "p", [field.required("spec.containers")])
    assert one.message == 'Pod "p" is invalid: spec.containers: Required value'
    several = errors.invalid(
        "g", "K", "k", [field.duplicate("a", "x"), field.too_many("b", 3, 2), ("c", "Other")]
    )
    assert several.message == (
        'K.g "k" is invalid: [a: Duplicate value: "x", b: Too many: 3: must have at most 2 '
        "items, c: Other]"
    )
    assert [c["reason"] for c in several.status["details"]["causes"]] == [
        "FieldValueDuplicate",
        "FieldValueTooMany",
        "FieldValueInvalid",
    ]


# ---- names -----------------------------------------------------------------------------------


def test_dns_names() -> None:
    assert names.dns1123_label("slot-0") == []
    assert names.dns1123_label("Slot_0") == [names.DNS1123_LABEL_FORMAT]
    assert names.dns1123_label("a" * 64) == ["must be no more than 63 characters"]
    assert names.dns1123_subdomain("a.b-c") == []
    assert names.dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]
    assert names.dns1123_subdomain("-a") == [names.DNS1123_SUBDOMAIN_FORMAT]


def test_qualified_names() -> None:
    assert names.qualified_name("akri.sh/instance") == []
    assert names.qualified_name("bad key!")[0].startswith("name part must consist of")
    assert names.qualified_name("Bad.Prefix/k")[0].startswith("prefix part a lowercase RFC 1123")
    assert names.qualified_name("a/b/c")[0].startswith("a valid label key must consist")
    assert names.qualified_name("x" * 64) == ["name part must be no more than 63 bytes"]
    assert names.qualified_name("/x") == ["prefix part must be non-empty"]
    assert names.qualified_name("akri.sh/") == ["name part must be non-empty"]


def test_label_values_identifiers_and_config_keys() -> None:
    assert names.label_value("") == []
    assert names.label_value("x" * 64) == ["must be no more than 63 bytes"]
    assert names.label_value("b c") == [names.LABEL_VALUE_FORMAT]
    assert names.c_identifier("slots") == []
    assert names.c_identifier("bad-name") == [names.C_IDENTIFIER_FORMAT]
    assert names.config_key("tls.crt") == []
    assert names.config_key("..x") == ["must not start with '..'"]
    assert names.config_key("bad key") == [names.CONFIG_KEY_FORMAT]


def test_namespace_and_service_names_have_no_dots() -> None:
    assert meta.dns_label_no_dots("a.b") == ["must not contain dots"]
    assert meta.dns_label_no_dots("Bad.NS") == [names.DNS1123_LABEL_FORMAT]
    assert meta.dns_label_no_dots("1abc") == []


def test_object_meta() -> None:
    problems = meta.object_meta(
        {"generateName": "Bad_", "labels": {"ok": "x" * 64}, "annotations": {"Bad Key": "v"}},
        names.dns1123_subdomain,
    )
    assert [p[0] for p in problems] == [
        "metadata.generateName",
        "metadata.labels",
        "metadata.annotations",
    ]
    assert meta.object_meta({"generateName": "broker-"}, names.dns1123_subdomain) == []


# ---- node selectors --------------------------------------------------------------------------


def term(**requirement: Any) -> JSON:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", **requirement}]}


def test_node_field_selector_takes_one_node_name_per_requirement() -> None:
    path = "s.nodeSelectorTerms[0].matchFields[0]"
    assert core.node_selector({"nodeSelectorTerms": [term(values=["a"])]}, "s") == []
    assert core.node_selector({"nodeSelectorTerms": [term(values=["a", "b"])]}, "s") == [
        (
            f"{path}.values",
            "Required value: must be only one value when `operator` is 'In' or 'NotIn' for "
            "node field selector",
        )
    ]
    two_terms = {"nodeSelectorTerms": [term(values=["a"]), term(values=["b"])]}
    assert core.node_selector(two_terms, "s") == []
    wrong = {"nodeSelectorTerms": [term(key="spec.x", operator="Exists", values=["A_b"])]}
    assert core.node_selector(wrong, "s") == [
        (f"{path}.operator", 'Invalid value: "Exists": not a valid selector operator'),
        (f"{path}.key", 'Invalid value: "spec.x": not a valid field selector key'),
    ]
    bad_name = {"nodeSelectorTerms": [term(values=["A_b"])]}
    assert core.node_selector(bad_name, "s") == [
        (f"{path}.values[0]", f'Invalid value: "A_b": {names.DNS1123_SUBDOMAIN_FORMAT}')
    ]


def test_node_label_selector_requirements() -> None:
    expressions = [
        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["a", "b"]},
        {"key": "k", "operator": "In"},
        {"key": "k", "operator": "Exists", "values": ["x"]},
        {"key": "k", "operator": "Gt", "values": ["1", "2"]},
        {"key": "bad key!", "operator": "Foo"},
    ]
    problems = core.node_selector({"nodeSelectorTerms": [{"matchExpressions": expressions}]}, "s")
    assert [(p[0].rsplit(".", 2)[-2:], p[1].split(":")[0]) for p in problems] == [
        (["matchExpressions[1]", "values"], "Required value"),
        (["matchExpressions[2]", "values"], "Forbidden"),
        (["matchExpressions[3]", "values"], "Required value"),
        (["matchExpressions[4]", "operator"], "Invalid value"),
        (["matchExpressions[4]", "key"], "Invalid value"),
    ]
    assert core.node_selector({"nodeSelectorTerms": []}, "s") == [
        ("s.nodeSelectorTerms", "Required value: must have at least one node selector term")
    ]


# ---- pods ------------------------------------------------------------------------------------


def pod_spec(**spec: Any) -> JSON:
    return {"containers": [{"name": "c", "image": "busybox"}], **spec}


def fields(problems: list[tuple[str, str]]) -> list[str]:
    return [f for f, _ in problems]


def test_a_plain_pod_spec_passes() -> None:
    assert core.pod_spec(pod_spec(), "spec") == []


def test_containers() -> None:
    spec = pod_spec(
        containers=[
            {"name": "Bad_C", "image": ""},
            {
                "name": "Bad_C",
                "image": "x",
                "ports": [{"containerPort": 0, "protocol": "FOO", "name": "toolongportname16"},
                          {"containerPort": 70000, "hostPort": -1}],
                "env": [{"name": ""}, {"name": "A", "valueFrom": {}}, {"name": "B=1"}],
                "volumeMounts": [{"name": "missing", "mountPath": ""}],
                "imagePullPolicy": "Sometimes",
                "livenessProbe": {},
            },
        ]
    )  # fmt: skip
    assert fields(core.pod_spec(spec, "spec")) == [
        "spec.containers[0].name",
        "spec.containers[0].image",
        "spec.containers[1].name",
        "spec.containers[1].livenessProbe",
        "spec.containers[1].ports[0].name",
        "spec.containers[1].ports[0].containerPort",
        "spec.containers[1].ports[0].protocol",
        "spec.containers[1].ports[1].containerPort",
        "spec.containers[1].ports[1].hostPort",
        "spec.containers[1].env[0].name",
        "spec.containers[1].env[1].valueFrom",
        "spec.containers[1].env[2].name",
        "spec.containers[1].volumeMounts[0].name",
        "spec.containers[1].volumeMounts[0].mountPath",
        "spec.containers[1].imagePullPolicy",
        "spec.containers[1].name",
    ]
    assert core.pod_spec(pod_spec(containers=[]), "spec") == [("spec.containers", "Required value")]


def test_volumes_and_mounts() -> None:
    spec = pod_spec(
        volumes=[{"name": "v", "hostPath": {"path": "/dev/x", "type": "Weird"}},
                 {"name": "w", "emptyDir": {}}, {"name": "w"}],
        containers=[{"name": "c", "image": "x", "volumeMounts": [
            {"name": "v", "mountPath": "/a"}, {"name": "w", "mountPath": "/a"}]}],
    )  # fmt: skip
    assert core.pod_spec(spec, "spec") == [
        ("spec.volumes[0].hostPath.type", 'Unsupported value: "Weird": supported values: "", '
         '"BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", '
         '"FileOrCreate", "Socket"'),
        ("spec.volumes[2].name", 'Duplicate value: "w"'),
        ("spec.containers[0].volumeMounts[0].name", 'Not found: "v"'),
        ("spec.containers[0].volumeMounts[1].mountPath", 'Invalid value: "/a": must be unique'),
    ]  # fmt: skip


def test_pod_claims() -> None:
    spec = pod_spec(
        resourceClaims=[{"name": "a", "resourceClaimTemplateName": "t"},
                        {"name": "a", "resourceClaimName": "x", "resourceClaimTemplateName": "t"},
                        {"name": "b"}],
        containers=[{"name": "c", "image": "x",
                     "resources": {"claims": [{"name": "zz"}, {"name": "a"}, {"name": "a"}]}}],
    )  # fmt: skip
    assert core.pod_spec(spec, "spec") == [
        ("spec.resourceClaims[1].name", 'Duplicate value: "a"'),
        ("spec.resourceClaims[1]", 'Invalid value: {"Name":"a","ResourceClaimName":"x",'
         '"ResourceClaimTemplateName":"t"}: at most one of `resourceClaimName` or '
         "`resourceClaimTemplateName` may be specified"),
        ("spec.resourceClaims[2]", 'Invalid value: {"Name":"b","ResourceClaimName":null,'
         '"ResourceClaimTemplateName":null}: must specify one of: `resourceClaimName`, '
         "`resourceClaimTemplateName`"),
        ("spec.containers[0].resources.claims[0]", 'Not found: "zz": must be one of the names '
         "in pod.spec.resourceClaims: a, a, b"),
        ("spec.containers[0].resources.claims[2]", 'Duplicate value: "a"'),
    ]  # fmt: skip


def test_pod_level_fields() -> None:
    spec = pod_spec(
        restartPolicy="Sometimes", dnsPolicy="Foo", nodeSelector={"bad key!": "v"},
        activeDeadlineSeconds=0, hostname="Bad_H",
        tolerations=[{"key": "k", "operator": "Exists", "value": "v"}, {"effect": "Foo"},
                     {"key": "k", "tolerationSeconds": 5, "effect": "NoSchedule"}],
        initContainers=[{"name": "c", "image": "x", "restartPolicy": "Never"}],
    )  # fmt: skip
    assert fields(core.pod_spec(spec, "spec")) == [
        "spec.initContainers[0].restartPolicy",
        "spec.initContainers[0].name",
        "spec.restartPolicy",
        "spec.dnsPolicy",
        "spec.nodeSelector",
        "spec.activeDeadlineSeconds",
        "spec.hostname",
        "spec.tolerations[0].operator",
        "spec.tolerations[1].operator",
        "spec.tolerations[1].effect",
        "spec.tolerations[2].effect",
    ]


# ---- services, config, events ----------------------------------------------------------------


def test_service() -> None:
    ports = [{"port": 0, "protocol": "FOO", "name": "Bad_N"}, {"port": 80, "targetPort": 0},
             {"port": 80, "targetPort": "bad_name_way_too_long"}]  # fmt: skip
    service = {"spec": {"type": "Foo", "ports": ports, "selector": {"bad key!": "v"},
                        "sessionAffinity": "Foo"}}  # fmt: skip
    assert fields(core.service(service)) == [
        "spec.ports[0].name",
        "spec.ports[0].port",
        "spec.ports[0].protocol",
        "spec.ports[1].name",
        "spec.ports[1].targetPort",
        "spec.ports[2].name",
        "spec.ports[2].targetPort",
        "spec.ports[2].targetPort",
        "spec.type",
        "spec.sessionAffinity",
        "spec.selector",
        "spec.ports[2]",
    ]
    assert core.service({"spec": {"ports": []}}) == [("spec.ports", "Required value")]
    assert core.service({"spec": {"clusterIP": "None"}}) == []
    assert core.service({"spec": {"ports": [{"port": 80, "targetPort": "http"}]}}) == []


def test_config_maps_secrets_events() -> None:
    both = {"data": {"bad key": "v", "ok": "v"}, "binaryData": {"ok": "dg=="}}
    assert fields(core.config_map(both)) == ["data[bad key]", "data[ok]"]
    assert core.secret({"type": "kubernetes.io/tls", "data": {"bad/key": "dg=="}})[1:] == [
        ("data[tls.crt]", "Required value"),
        ("data[tls.key]", "Required value"),
    ]
    assert core.secret({"type": "Opaque", "data": {"ca.crt": "x"}}) == []
    elsewhere = {"metadata": {"namespace": "a"}, "involvedObject": {"namespace": "b"}}
    assert core.event(elsewhere) == [
        ("involvedObject.namespace", 'Invalid value: "b": does not match event.namespace')
    ]
    assert core.event({"metadata": {"namespace": "a"}, "involvedObject": {"kind": "Node"}}) == []


# ---- batch, coordination, admission ----------------------------------------------------------


def test_job() -> None:
    template = {"spec": pod_spec()}
    assert batch.job({"spec": {"template": template}}) == [
        ("spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"')
    ]
    always = {"spec": pod_spec(restartPolicy="Always", containers=[])}
    negative = {"spec": {"parallelism": -1, "completions": -1, "backoffLimit": -1,
                         "template": always}}  # fmt: skip
    assert fields(batch.job(negative)) == [
        "spec.parallelism",
        "spec.completions",
        "spec.backoffLimit",
        "spec.template.spec.restartPolicy",
        "spec.template.spec.containers",
    ]


def test_lease() -> None:
    stamp = "2026-11-29T08:00:00.123456Z"
    fine = {"spec": {"leaseDurationSeconds": 15, "acquireTime": stamp, "renewTime": stamp}}
    assert coordination.lease(fine) == []
    assert fields(
        coordination.lease({"spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}})
    ) == [
        "spec.leaseDurationSeconds",
        "spec.leaseTransitions",
    ]
    with pytest.raises(ValueError, match=r'cannot parse "Z" as "\.000000"'):
        coordination.lease({"spec": {"renewTime": "2020-01-01T00:00:00Z"}})


def webhook(**fields_: Any) -> JSON:
    return {"name": "validate.akri.sh.x", "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/v"}},
            **fields_}  # fmt: skip


def test_validating_webhook_configuration() -> None:
    check = admissionregistration.validating_webhook_configuration
    assert check({"webhooks": [webhook()]}) == []
    bad = webhook(
        name="nodots", failurePolicy="Maybe", matchPolicy="Foo", sideEffects="Some",
        timeoutSeconds=31, admissionReviewVersions=["v2"], clientConfig={},
        rules=[{"operations": ["FOO"], "scope": "Bad"}],
    )  # fmt: skip
    assert fields(
        check({"webhooks": [bad, webhook(name="nodots", admissionReviewVersions=[])]})
    ) == [
        "webhooks[0].name",
        "webhooks[0].rules[0].operations[0]",
        "webhooks[0].rules[0].scope",
        "webhooks[0].failurePolicy",
        "webhooks[0].matchPolicy",
        "webhooks[0].sideEffects",
        "webhooks[0].timeoutSeconds",
        "webhooks[0].clientConfig",
        "webhooks[0].admissionReviewVersions",
        "webhooks[1].name",
        "webhooks[1].admissionReviewVersions",
        "webhooks[1].name",
    ]
    service = webhook(clientConfig={"service": {"name": "s", "namespace": "n", "port": 0,
                                                "path": "v"}})  # fmt: skip
    assert fields(check({"webhooks": [service]})) == [
        "webhooks[0].clientConfig.service.port",
        "webhooks[0].clientConfig.service.path",
    ]


# ---- DRA -------------------------------------------------------------------------------------


def resource_slice(**spec: Any) -> JSON:
    return {"spec": {"driver": "akri.sh",
                     "pool": {"name": "cfg/shared", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "d0"}], **spec}}  # fmt: skip


def test_slice_node_selection() -> None:
    assert resource.resource_slice(resource_slice(nodeName="node-a")) == []
    assert resource.resource_slice(resource_slice()) == [
        ("spec", "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
                 "`perDeviceNodeSelection` is required")
    ]  # fmt: skip
    assert fields(resource.resource_slice(resource_slice(nodeName="a", allNodes=True))) == ["spec"]
    assert fields(resource.resource_slice(resource_slice(allNodes=False, nodeName="a"))) == [
        "spec.allNodes"
    ]
    one, other = term(values=["a"]), term(values=["b"])
    two_terms = resource_slice(nodeSelector={"nodeSelectorTerms": [one, other]})
    assert resource.resource_slice(two_terms) == [
        ("spec.nodeSelector.nodeSelectorTerms", 'Invalid value: [{"MatchExpressions":null,'
         '"MatchFields":[{"Key":"metadata.name","Operator":"In","Values":["a"]}]},'
         '{"MatchExpressions":null,"MatchFields":[{"Key":"metadata.name","Operator":"In",'
         '"Values":["b"]}]}]: must have exactly one node selector term')
    ]  # fmt: skip


def test_per_device_node_selection() -> None:
    def shared(*devices: JSON) -> list[tuple[str, str]]:
        return resource.resource_slice(
            resource_slice(perDeviceNodeSelection=True, devices=list(devices))
        )

    selector = {"nodeSelectorTerms": [term(values=["a"]), term(values=["b"])]}
    assert shared({"name": "d0", "nodeSelector": selector}) == []
    assert shared({"name": "d0", "allNodes": True}) == []
    assert fields(shared({"name": "d0"})) == ["spec.devices[0]"]
    assert fields(shared({"name": "d0", "nodeName": "a", "allNodes": True})) == ["spec.devices[0]"]
    assert fields(shared({"name": "d0", "nodeName": ""})) == [
        "spec.devices[0].nodeName",
        "spec.devices[0]",
    ]
    several = {"nodeSelectorTerms": [term(values=["a", "b"])]}
    assert fields(shared({"name": "d0", "nodeSelector": several})) == [
        "spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchFields[0].values"
    ]
    local = resource_slice(nodeName="a", devices=[{"name": "d0", "nodeName": "a"}])
    assert resource.resource_slice(local) == [
        ("spec.devices[0]", "Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` "
         "can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec")
    ]  # fmt: skip


def test_slice_devices_pool_and_driver() -> None:
    devices = [{"name": "x"}, {"name": "x"}, {"name": "Bad_Name"}]
    assert fields(resource.resource_slice(resource_slice(nodeName="a", devices=devices))) == [
        "spec.devices[1]",
        "spec.devices[2].name",
    ]
    tainted = [{"name": f"d{i}", "taints": [{"key": "k", "effect": "NoSchedule"}]}
               for i in range(65)]  # fmt: skip
    assert resource.resource_slice(resource_slice(nodeName="a", devices=tainted)) == [
        ("spec.devices", "Too many: 65: must have at most 64 items")
    ]
    plain = [{"name": f"d{i}"} for i in range(128)]
    assert resource.resource_slice(resource_slice(nodeName="a", devices=plain)) == []
    pool = {"name": "a/B_c", "generation": -1, "resourceSliceCount": 0}
    assert fields(resource.resource_slice(resource_slice(nodeName="a", pool=pool, driver=""))) == [
        "spec.driver",
        "spec.pool.name",
        "spec.pool.resourceSliceCount",
        "spec.pool.generation",
    ]


def test_device_attributes_capacity_taints() -> None:
    attributes = {"ok": {"string": "x"}, "akri.sh/ok2": {"int": 1}, "bad-name": {"string": "x"},
                  "thisnameiswaytoolongforadeviceattributeid": {"bool": True},
                  "two": {"string": "a", "int": 1}, "none": {}, "long": {"string": "x" * 65},
                  "ver": {"version": "1.x"}}  # fmt: skip
    capacity = {"slots": {"value": "2", "requestPolicy": {"default": "1"}},
                "bad-cap": {"value": "1"}}  # fmt: skip
    taints = [{"key": "bad key", "effect": "Foo", "value": "x" * 64}, {"key": "k"}]
    device = {"name": "d0", "attributes": attributes, "capacity": capacity, "taints": taints}
    assert fields(resource.resource_slice(resource_slice(nodeName="a", devices=[device]))) == [
        "spec.devices[0].attributes",
        "spec.devices[0].attributes",
        "spec.devices[0].attributes[two]",
        "spec.devices[0].attributes[none]",
        "spec.devices[0].attributes[long].string",
        "spec.devices[0].attributes[ver].version",
        "spec.devices[0].capacity[slots].requestPolicy",
        "spec.devices[0].capacity",
        "spec.devices[0].taints[0].key",
        "spec.devices[0].taints[0].value",
        "spec.devices[0].taints[0].effect",
        "spec.devices[0].taints[1].effect",
    ]
    crowded = {"name": "d0", "attributes": {f"a{i}": {"int": i} for i in range(33)}}
    assert resource.resource_slice(resource_slice(nodeName="a", devices=[crowded])) == [
        ("spec.devices[0]", "Invalid value: 33: the total number of attributes and capacities "
         "must not exceed 32")
    ]  # fmt: skip


def test_device_class_and_claims() -> None:
    broken = {"spec": {"selectors": [{"cel": {"expression": "device.driver =="}}, {}],
                       "extendedResourceName": "cpu"}}  # fmt: skip
    assert fields(resource.device_class(broken)) == [
        "spec.selectors[0].cel.expression",
        "spec.selectors[1].cel",
        "spec.extendedResourceName",
    ]
    requests = [{"name": "slot", "exactly": {"deviceClassName": "", "count": 0}},
                {"name": "Bad_Name"},
                {"name": "slot", "exactly": {"deviceClassName": "c", "allocationMode": "Foo"}},
                {"name": "all", "exactly": {"deviceClassName": "c", "allocationMode": "All",
                                            "count": 2}}]  # fmt: skip
    claim = {"spec": {"devices": {"requests": requests}}}
    assert fields(resource.resource_claim(claim)) == [
        "spec.devices.requests[0].exactly.deviceClassName",
        "spec.devices.requests[1].name",
        "spec.devices.requests[1]",
        "spec.devices.requests[2].exactly.allocationMode",
        "spec.devices.requests[2]",
        "spec.devices.requests[3].exactly.count",
    ]
    template = {"spec": {"metadata": {"labels": {"bad key!": "v"}}, "spec": claim["spec"]}}
    assert fields(resource.resource_claim_template(template))[:2] == [
        "spec.metadata.labels",
        "spec.spec.devices.requests[0].exactly.deviceClassName",
    ]
    changed = copy.deepcopy(claim)
    changed["spec"]["devices"]["requests"].pop()
    assert resource.immutable_spec(claim, changed) == [
        ("spec", "Invalid value: field is immutable")
    ]
    assert resource.immutable_spec(claim, copy.deepcopy(claim)) == []


# ---- what the product writes -----------------------------------------------------------------


def product_instance(name: str, nodes: list[str]) -> Instance:
    return Instance.from_wire({
        "apiVersion": "akri.sh/v0", "kind": "Instance",
        "metadata": {"name": name, "namespace": "default", "uid": "u-1"},
        "spec": {"configurationName": "cfg", "capacity": 3, "shared": True, "nodes": nodes,
                 "brokerProperties": {"DEBUG_ECHO_DESCRIPTION": "foo0"}},
    })  # fmt: skip


@pytest.mark.parametrize("unique", [True, False])
def test_the_products_dra_objects_are_accepted(unique: bool) -> None:
    instance = product_instance("cfg-8120fe", ["node-a"])
    devices = instance_devices(
        instance, handler="debugEcho", unique=unique, per_device_nodes=False, offline=True
    ).devices
    writes = plan(Pool("cfg/node/node-a", "node-a", devices), [])
    for created in writes.creates:
        assert resource.resource_slice(created) == []
        assert meta.object_meta(created["metadata"], names.dns1123_subdomain) == []
    shared = instance_devices(instance, handler="debugEcho", unique=unique, per_device_nodes=True)
    for created in plan(Pool("cfg/shared", None, shared.devices), []).creates:
        assert resource.resource_slice(created) == []
    configuration = Configuration.from_wire({
        "apiVersion": "akri.sh/v0", "kind": "Configuration",
        "metadata": {"name": "cfg", "namespace": "default"},
        "spec": {"discoveryHandler": {"name": "debugEcho"}, "capacity": 3},
    })  # fmt: skip
    assert (
        resource.device_class(device_class(configuration, {"akri.sh/configuration": "cfg"})) == []
    )
    template = instance_claim_template(instance, {"akri.sh/instance": "cfg-8120fe"})
    assert resource.resource_claim_template(template) == []
