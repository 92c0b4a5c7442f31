"""Built-in kinds: what kube-apiserver refuses, refused in its words (422 `Invalid`, each cause
with its field and reason), and what our objects need accepted. Every expected message was
read from kube-apiserver 1.36."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.conformance.support import GROUP

JSON = dict[str, Any]
DRA = "/apis/resource.k8s.io/v1"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)


async def post(
    api: client.ApiClient, path: str, body: JSON | None, method: str = "POST"
) -> tuple[int, JSON]:
    """`body` sent as is (the typed client would fill in or check fields); the status and the
    decoded answer."""
    response = await api.call_api(
        path,
        method,
        body=body,
        header_params={"Accept": "application/json", "Content-Type": "application/json"},
        auth_settings=["BearerToken"],
        _preload_content=False,
        _return_http_data_only=True,
    )
    try:
        return response.status, json.loads(await response.read())
    finally:
        response.release()


def resource_slice(name: str, **spec: Any) -> JSON:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "akri.sh",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "d0"}],
            **spec,
        },
    }


def on_nodes(*terms: JSON) -> JSON:
    """A one-device shared slice whose device is selected by `terms`."""
    device = {"name": "d0", "nodeSelector": {"nodeSelectorTerms": list(terms)}}
    return {"perDeviceNodeSelection": True, "devices": [device]}


def node_name(*values: str) -> JSON:
    return {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(values)}]}


def pod(name: str, **spec: Any) -> JSON:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"schedulerName": "akri-conformance-no-scheduler",
                     "containers": [{"name": "c", "image": "busybox"}], **spec}}  # fmt: skip


def claim_request(**exactly: Any) -> JSON:
    return {"name": "slot", "exactly": {"deviceClassName": "x.akri.sh", **exactly}}


# (path under the test namespace or the cluster, body, the message after `is invalid: `,
# the causes' reasons)
REFUSED: dict[str, tuple[str, JSON, str, list[str]]] = {
    "slice matchFields with several nodes": (
        f"{DRA}/resourceslices",
        resource_slice("v-many", **on_nodes(node_name("node-a", "node-b"))),
        "spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchFields[0].values: Required "
        "value: must be only one value when `operator` is 'In' or 'NotIn' for node field "
        "selector",
        ["FieldValueRequired"],
    ),
    "slice matchFields with another field": (
        f"{DRA}/resourceslices",
        resource_slice("v-key", **on_nodes({"matchFields": [
            {"key": "spec.unschedulable", "operator": "In", "values": ["false"]}]})),
        "spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchFields[0].key: Invalid value: "
        '"spec.unschedulable": not a valid field selector key',
        ["FieldValueInvalid"],
    ),
    "slice node selector without terms": (
        f"{DRA}/resourceslices",
        resource_slice("v-noterm", **on_nodes()),
        "spec.devices[0].nodeSelector.nodeSelectorTerms: Required value: must have at least one "
        "node selector term",
        ["FieldValueRequired"],
    ),
    "slice label expression without values": (
        f"{DRA}/resourceslices",
        resource_slice("v-expr", **on_nodes({"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In"}]})),
        "spec.devices[0].nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required "
        "value: must be specified when `operator` is 'In' or 'NotIn'",
        ["FieldValueRequired"],
    ),
    "slice without node selection": (
        f"{DRA}/resourceslices",
        resource_slice("v-none"),
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
        "`perDeviceNodeSelection` is required",
        ["FieldValueRequired"],
    ),
    "slice with two node selections": (
        f"{DRA}/resourceslices",
        resource_slice("v-two", nodeName="node-a", allNodes=True),
        'spec: Invalid value: "{`nodeName`, `allNodes`}": exactly one of `nodeName`, '
        "`nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields "
        "are set",
        ["FieldValueInvalid"],
    ),
    "shared slice device without node selection": (
        f"{DRA}/resourceslices",
        resource_slice("v-per", perDeviceNodeSelection=True),
        "spec.devices[0]: Required value: exactly one of `nodeName`, `nodeSelector`, or "
        "`allNodes` is required when `perDeviceNodeSelection` is set to true in the "
        "ResourceSlice spec",
        ["FieldValueRequired"],
    ),
    "local slice device with node selection": (
        f"{DRA}/resourceslices",
        resource_slice("v-local", nodeName="node-a", devices=[{"name": "d0", "nodeName": "a"}]),
        "spec.devices[0]: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can "
        "only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec",
        ["FieldValueInvalid"],
    ),
    "slice with a device twice": (
        f"{DRA}/resourceslices",
        resource_slice("v-dup", nodeName="node-a", devices=[{"name": "x"}, {"name": "x"}]),
        'spec.devices[1]: Duplicate value: "x"',
        ["FieldValueDuplicate"],
    ),
    "slice device name": (
        f"{DRA}/resourceslices",
        resource_slice("v-name", nodeName="node-a", devices=[{"name": "Slot_0"}]),
        f'spec.devices[0].name: Invalid value: "Slot_0": {LABEL}',
        ["FieldValueInvalid"],
    ),
    "slice pool counts": (
        f"{DRA}/resourceslices",
        resource_slice("v-pool", nodeName="node-a",
                       pool={"name": "p", "generation": -1, "resourceSliceCount": 0}),
        "[spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero, "
        "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero]",
        ["FieldValueInvalid", "FieldValueInvalid"],
    ),
    "slice over the device limit with taints": (
        f"{DRA}/resourceslices",
        resource_slice("v-many-devices", nodeName="node-a", devices=[
            {"name": f"d{i}", "taints": [{"key": "akri.sh/offline", "effect": "NoSchedule"}]}
            for i in range(65)]),
        "spec.devices: Too many: 65: must have at most 64 items",
        ["FieldValueTooMany"],
    ),
    "slice attribute name": (
        f"{DRA}/resourceslices",
        resource_slice("v-attr", nodeName="node-a",
                       devices=[{"name": "d0", "attributes": {"bad-name": {"string": "x"}}}]),
        'spec.devices[0].attributes: Invalid value: "bad-name": a valid C identifier must '
        "start with alphabetic character or '_', followed by a string of alphanumeric "
        "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for "
        "validation is '[A-Za-z_][A-Za-z0-9_]*')",
        ["FieldValueInvalid"],
    ),
    "slice attribute string length": (
        f"{DRA}/resourceslices",
        resource_slice("v-long", nodeName="node-a",
                       devices=[{"name": "d0", "attributes": {"instance": {"string": "x" * 65}}}]),
        "spec.devices[0].attributes[instance].string: Too long: may not be more than 64 bytes",
        ["FieldValueTooLong"],
    ),
    "slice taint effect": (
        f"{DRA}/resourceslices",
        resource_slice("v-taint", nodeName="node-a",
                       devices=[{"name": "d0", "taints": [{"key": "k", "effect": "Foo"}]}]),
        'spec.devices[0].taints[0].effect: Unsupported value: "Foo": supported values: '
        '"NoExecute", "NoSchedule", "None"',
        ["FieldValueNotSupported"],
    ),
    "slice name": (
        f"{DRA}/resourceslices",
        resource_slice("Shared_0", nodeName="node-a"),
        f'metadata.name: Invalid value: "Shared_0": {SUBDOMAIN}',
        ["FieldValueInvalid"],
    ),
    "device class extended resource name": (
        f"{DRA}/deviceclasses",
        {"metadata": {"name": "v-class"}, "spec": {"extendedResourceName": "kubernetes.io/x"}},
        'spec.extendedResourceName: Invalid value: "kubernetes.io/x": must be a valid extended '
        "resource name",
        ["FieldValueInvalid"],
    ),
    "device class selector without cel": (
        f"{DRA}/deviceclasses",
        {"metadata": {"name": "v-class"}, "spec": {"selectors": [{}]}},
        "spec.selectors[0].cel: Required value",
        ["FieldValueRequired"],
    ),
    "claim count with allocation mode All": (
        f"{DRA}/namespaces/{{ns}}/resourceclaims",
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": [claim_request(allocationMode="All", count=2)]}}},
        "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when "
        "allocationMode is 'All'",
        ["FieldValueInvalid"],
    ),
    "claim requests with one name": (
        f"{DRA}/namespaces/{{ns}}/resourceclaims",
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c"},
         "spec": {"devices": {"requests": [claim_request(), claim_request()]}}},
        'spec.devices.requests[1]: Duplicate value: "slot"',
        ["FieldValueDuplicate"],
    ),
    "claim template labels and count": (
        f"{DRA}/namespaces/{{ns}}/resourceclaimtemplates",
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "t"},
         "spec": {"metadata": {"labels": {"akri.sh/instance": "bad value!"}},
                  "spec": {"devices": {"requests": [claim_request(count=-1)]}}}},
        '[spec.metadata.labels: Invalid value: "bad value!": a valid label must be an empty '
        "string or consist of alphanumeric characters, '-', '_' or '.', and must start and end "
        "with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex "
        "used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?'), "
        "spec.spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than "
        "zero]",
        ["FieldValueInvalid", "FieldValueInvalid"],
    ),
}  # fmt: skip

REFUSED_CORE: dict[str, tuple[str, JSON, str, list[str]]] = {
    "pod without containers": (
        "/api/v1/namespaces/{ns}/pods", pod("p", containers=[]),
        "spec.containers: Required value", ["FieldValueRequired"],
    ),
    "pod containers": (
        "/api/v1/namespaces/{ns}/pods",
        pod("p", containers=[{"name": "c", "image": ""}, {"name": "c", "image": "busybox",
                             "ports": [{"containerPort": 70000}],
                             "imagePullPolicy": "Sometimes"}]),
        "[spec.containers[0].image: Required value, spec.containers[1].ports[0].containerPort: "
        "Invalid value: 70000: must be between 1 and 65535, inclusive, "
        'spec.containers[1].imagePullPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "IfNotPresent", "Never", spec.containers[1].name: Duplicate value: "c"]',
        ["FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported",
         "FieldValueDuplicate"],
    ),
    "pod node affinity on several node names": (
        "/api/v1/namespaces/{ns}/pods",
        pod("p", affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [node_name("node-a", "node-b")]}}}),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
        "nodeSelectorTerms[0].matchFields[0].values: Required value: must be only one value "
        "when `operator` is 'In' or 'NotIn' for node field selector",
        ["FieldValueRequired"],
    ),
    "pod claims": (
        "/api/v1/namespaces/{ns}/pods",
        pod("p", resourceClaims=[{"name": "a", "resourceClaimTemplateName": "t"}],
            containers=[{"name": "c", "image": "busybox",
                         "resources": {"claims": [{"name": "b"}]}}]),
        'spec.containers[0].resources.claims[0]: Not found: "b": must be one of the names in '
        "pod.spec.resourceClaims: a",
        ["FieldValueNotFound"],
    ),
    "pod volume mount of no volume": (
        "/api/v1/namespaces/{ns}/pods",
        pod("p", containers=[{"name": "c", "image": "busybox",
                              "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]),
        'spec.containers[0].volumeMounts[0].name: Not found: "v"',
        ["FieldValueNotFound"],
    ),
    "pod restart policy and tolerations": (
        "/api/v1/namespaces/{ns}/pods",
        pod("p", restartPolicy="Sometimes", tolerations=[{"operator": "Equal", "value": "v"}]),
        '[spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
        '"OnFailure", "Never", spec.tolerations[0].operator: Invalid value: "Equal": operator '
        'must be Exists when `key` is empty, which means "match all values and all keys"]',
        ["FieldValueNotSupported", "FieldValueInvalid"],
    ),
    "service ports without names": (
        "/api/v1/namespaces/{ns}/services",
        {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}, {"port": 81}]}},
        "[spec.ports[0].name: Required value, spec.ports[1].name: Required value]",
        ["FieldValueRequired", "FieldValueRequired"],
    ),
    "service port and type": (
        "/api/v1/namespaces/{ns}/services",
        {"metadata": {"name": "s"}, "spec": {"type": "Foo", "ports": [{"port": 0}]}},
        "[spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive, "
        "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive, "
        'spec.type: Unsupported value: "Foo": supported values: "ClusterIP", "ExternalName", '
        '"LoadBalancer", "NodePort"]',
        ["FieldValueInvalid", "FieldValueInvalid", "FieldValueNotSupported"],
    ),
    "service name with dots": (
        "/api/v1/namespaces/{ns}/services",
        {"metadata": {"name": "a.b"}, "spec": {"ports": [{"port": 80}]}},
        'metadata.name: Invalid value: "a.b": must not contain dots',
        ["FieldValueInvalid"],
    ),
    "job restart policy": (
        "/apis/batch/v1/namespaces/{ns}/jobs",
        {"metadata": {"name": "j"},
         "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}},
        'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"',
        ["FieldValueRequired"],
    ),
    "lease duration": (
        "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
        {"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0}},
        "spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
        ["FieldValueInvalid"],
    ),
    "event of another namespace": (
        "/api/v1/namespaces/{ns}/events",
        {"metadata": {"name": "e"}, "reason": "R", "type": "Normal",
         "involvedObject": {"kind": "Pod", "name": "p", "namespace": "elsewhere"}},
        'involvedObject.namespace: Invalid value: "elsewhere": does not match event.namespace',
        ["FieldValueInvalid"],
    ),
    "config map key": (
        "/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "m"}, "data": {"bad key": "v"}},
        'data[bad key]: Invalid value: "bad key": a valid config key must consist of '
        "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
        "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')",
        ["FieldValueInvalid"],
    ),
    "tls secret without its keys": (
        "/api/v1/namespaces/{ns}/secrets",
        {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {}},
        "[data[tls.crt]: Required value, data[tls.key]: Required value]",
        ["FieldValueRequired", "FieldValueRequired"],
    ),
    "label key and value": (
        "/api/v1/namespaces/{ns}/configmaps",
        {"metadata": {"name": "m", "labels": {"akri.sh/instance": "x" * 64}}},
        'metadata.labels: Invalid value: "' + "x" * 64 + '": must be no more than 63 bytes',
        ["FieldValueInvalid"],
    ),
    "webhook": (
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        {"metadata": {"name": "v-webhook"}, "webhooks": [{
            "name": "akri", "clientConfig": {"service": {"name": "s", "namespace": "n"}},
            "sideEffects": "None", "admissionReviewVersions": ["v2"],
            "failurePolicy": "Maybe"}]},
        '[webhooks[0].name: Invalid value: "akri": should be a domain with at least three '
        'segments separated by dots, webhooks[0].failurePolicy: Unsupported value: "Maybe": '
        'supported values: "Fail", "Ignore", webhooks[0].admissionReviewVersions: Invalid '
        'value: ["v2"]: must include at least one of v1, v1beta1]',
        ["FieldValueInvalid", "FieldValueNotSupported", "FieldValueInvalid"],
    ),
}  # fmt: skip

KINDS = {"ResourceSlice", "DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "Pod",
         "Service", "Job", "Lease", "Event", "ConfigMap", "Secret",
         "ValidatingWebhookConfiguration"}  # fmt: skip


@pytest.mark.parametrize("case", [*REFUSED, *REFUSED_CORE])
async def test_refused_in_the_servers_words(
    api: client.ApiClient, namespace: str, case: str
) -> None:
    path, body, expected, reasons = {**REFUSED, **REFUSED_CORE}[case]
    path = path.replace("{ns}", namespace)
    code, status = await post(api, path, body)
    assert code == 422, status
    name = body["metadata"]["name"]
    kind = status["details"]["kind"]
    assert kind in KINDS
    group = status["details"].get("group")
    qualified = f"{kind}.{group}" if group else kind
    assert status["message"] == f'{qualified} "{name}" is invalid: {expected}'
    assert [c["reason"] for c in status["details"]["causes"]] == reasons


async def test_one_term_per_node_is_accepted(api: client.ApiClient, namespace: str) -> None:
    """What a shared device needs: one node selector term per node (terms are ORed), or a
    hostname label expression with several values."""
    for name, terms in {
        f"{namespace}-terms": [node_name("node-a"), node_name("node-b")],
        f"{namespace}-hostname": [{"matchExpressions": [
            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a", "node-b"]}]}],
    }.items():  # fmt: skip
        code, status = await post(
            api, f"{DRA}/resourceslices", resource_slice(name, **on_nodes(*terms))
        )
        assert code == 201, status
        await post(api, f"{DRA}/resourceslices/{name}", None, "DELETE")


async def test_claim_spec_is_immutable(api: client.ApiClient, namespace: str) -> None:
    resources = client.ResourceV1Api(api)
    body = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [claim_request()]}}}
    code, status = await post(api, f"{DRA}/namespaces/{namespace}/resourceclaims", body)
    assert code == 201, status
    changed = {"spec": {"devices": {"requests": [claim_request(count=2)]}}}
    with pytest.raises(client.ApiException) as refused:
        await resources.patch_namespaced_resource_claim("c", namespace, changed)
    assert refused.value.status == 422
    causes = json.loads(refused.value.body or b"{}")["details"]["causes"]
    assert [(c["field"], c["message"].endswith("field is immutable")) for c in causes] == [
        ("spec", True)
    ]


async def test_custom_resource_without_kind_is_400(
    widgets: None, api: client.ApiClient, namespace: str
) -> None:
    body = {"metadata": {"name": "w"}, "spec": {"color": "red"}}
    code, status = await post(api, f"/apis/{GROUP}/v1/namespaces/{namespace}/widgets", body)
    assert code == 400
    raw = json.dumps(body)
    assert status["message"] == (
        "the object provided is unrecognized (must be of type Widget): Object 'Kind' is "
        f"missing in '{raw}' ({raw[:30]} ...)"
    )
