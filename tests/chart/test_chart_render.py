"""The chart rendered by the real Helm engine for every value combination we ship examples for.

Each combination is installed (without waiting) into an API emulator; the manifests Helm sent
are checked against the Kubernetes schemas of every supported version (`kubernetes-validate
--strict`: unknown fields fail), our own Configuration model, and the chart's promises.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

import kubernetes_validate
import pytest
import yaml

from akri.api import Configuration
from akri.discovery_handlers.opcua.servers import details_of as opcua_details
from tests.chart.helm_render import lint, render

# kubernetes-validate re-reads its 2 MB definitions file on every call: read each file once.
kubernetes_validate.utils.schema_contents = functools.cache(
    kubernetes_validate.utils.schema_contents
)

# Kubernetes versions the chart supports (Chart.yaml kubeVersion >= 1.30).
KUBERNETES_VERSIONS = [f"1.{minor}.0" for minor in range(30, 38)]
# Custom resources have no built-in schema: ours are checked by the model, these by nothing here.
NO_SCHEMA = {"monitoring.coreos.com/v1", "cert-manager.io/v1"}

ALL_EXAMPLES = {
    name: {"enabled": True, "brokerImage": "nginx:stable-alpine", "servicePort": 80}
    for name in ("debugEcho", "udev", "onvif", "mdns", "opcua")
}
COMBINATIONS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "debug-echo-embedded": {
        "agent": {"embedDebugEcho": True},
        "examples": {"debugEcho": {"enabled": True}},
    },
    "all-handlers-and-examples": {
        "discoveryHandlers": {
            **{name: {"enabled": True} for name in ("debugEcho", "udev", "mdns", "opcua")},
            "onvif": {"enabled": True, "interfaceAddress": "10.0.0.2", "ipv6Interface": "eth0"},
        },
        "examples": {
            **ALL_EXAMPLES,
            "debugEcho": {
                **ALL_EXAMPLES["debugEcho"],
                "uniqueDevices": False,
                "brokerResources": {"requests": {"cpu": "10m"}, "limits": {"memory": "64Mi"}},
            },
            "onvif": {
                **ALL_EXAMPLES["onvif"],
                "scopes": ["onvif://www.onvif.org/name/Lobby"],
                "credentialsSecret": "onvif-auth",
            },
            "mdns": {**ALL_EXAMPLES["mdns"], "names": ["^printer-.*"]},
            "opcua": {
                **ALL_EXAMPLES["opcua"],
                "discoveryUrls": ["opc.tcp://localhost:4840/", "opc.tcp://10.0.0.20:48010/"],
                "applicationNames": {"action": "Include", "items": ["Press 1"]},
                "mountCertificates": True,
            },
        },
        "agent": {"discoveryPropertiesFrom": {"secrets": True, "configMaps": True}},
    },
    "monitoring": {
        "monitoring": {"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}}
    },
    "cert-manager": {
        "webhook": {"certManager": {"enabled": True}, "failurePolicy": "Ignore"},
    },
    "dra": {"mode": "dra"},
    "dra-auto": {"mode": "auto", "agent": {"cdiDir": "/etc/cdi"}},
    "single-controller-namespaced": {
        "controller": {"replicas": 1, "leaderElection": {"enabled": False}},
        "watchNamespace": "devices",
        "webhook": {"enabled": False},
        "agent": {
            "priorityClassName": "system-node-critical",
            "allowedMountPaths": ["/srv/models", "/var/lib/camera-config"],
        },
    },
}


@functools.cache
def rendered() -> dict[str, list[dict[str, Any]]]:
    """Every combination's manifest documents, rendered once per session."""
    results = render([{"release": name, "values": v} for name, v in COMBINATIONS.items()])
    documents = {}
    for name, result in results.items():
        assert "error" not in result, f"{name}: {result.get('error')}"
        found = [d for d in yaml.safe_load_all(result["manifest"]) if d]
        documents[name] = found + [example for d in found for example in examples_in(d)]
    return documents


def examples_in(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The example Configurations the chart's examples hook applies (from its ConfigMap)."""
    if document["kind"] != "ConfigMap" or not document["metadata"]["name"].endswith("-examples"):
        return []
    text = document["data"]["configurations.yaml"]
    return [d for d in yaml.safe_load_all(text) if d]


def objects(combination: str, kind: str) -> Iterator[dict[str, Any]]:
    return (d for d in rendered()[combination] if d["kind"] == kind)


def the(combination: str, kind: str, name_suffix: str = "") -> dict[str, Any]:
    (found,) = (
        d for d in objects(combination, kind) if d["metadata"]["name"].endswith(name_suffix)
    )
    return found


def env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


@pytest.mark.parametrize("combination", COMBINATIONS)
def test_every_manifest_is_valid_for_every_supported_kubernetes(combination: str) -> None:
    for document in rendered()[combination]:
        if document["apiVersion"] in NO_SCHEMA:
            continue
        if document["apiVersion"] == "akri.sh/v0":
            Configuration.model_validate(document)
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(document, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                name = f"{document['kind']}/{document['metadata']['name']}"
                pytest.fail(f"{combination}: {name} invalid for Kubernetes {version}: {error}")


def test_agent_daemonset_defaults() -> None:
    agent = the("defaults", "DaemonSet", "-agent")
    assert agent["spec"]["updateStrategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 1},
    }
    pod = agent["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"operator": "Exists"}], "an agent on every node, tainted too"
    assert "hostNetwork" not in pod, "the agent discovers nothing by multicast itself"
    assert "priorityClassName" not in pod
    (container,) = pod["containers"]
    variables = env(container)
    assert variables["AGENT_NODE_NAME"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert variables["DEVICE_PLUGINS_DIR"] == "/var/lib/kubelet/device-plugins"
    assert variables["POD_RESOURCES_SOCKET"] == "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert "ENABLE_DEBUG_ECHO" not in variables
    host_paths = {v["hostPath"]["path"] for v in pod["volumes"] if "hostPath" in v}
    assert host_paths == {
        "/var/lib/kubelet/device-plugins",
        "/var/lib/kubelet/pod-resources",
        "/var/lib/akri",
    }
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
    assert container["resources"]["requests"]
    assert container["resources"]["limits"]["memory"]


def test_agent_options_reach_the_pod() -> None:
    pod = the("debug-echo-embedded", "DaemonSet", "-agent")["spec"]["template"]["spec"]
    assert env(pod["containers"][0])["ENABLE_DEBUG_ECHO"] == "true"
    pod = the("single-controller-namespaced", "DaemonSet", "-agent")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert env(pod["containers"][0])["AKRI_NAMESPACE"] == "devices"


def test_allowed_mount_paths_reach_the_agent_and_are_mounted_read_only_into_it() -> None:
    """The agent follows links in them as the node has them; none are allowed by default."""
    pod = the("single-controller-namespaced", "DaemonSet", "-agent")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    allowed = ["/srv/models", "/var/lib/camera-config"]
    assert json.loads(env(container)["ALLOWED_MOUNT_PATHS"]) == allowed
    mounted = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for i, path in enumerate(allowed):
        assert mounted[f"allowed-mount-{i}"] == {
            "name": f"allowed-mount-{i}",
            "mountPath": path,
            "readOnly": True,
        }
        assert volumes[f"allowed-mount-{i}"]["hostPath"] == {"path": path}
    defaults = the("defaults", "DaemonSet", "-agent")["spec"]["template"]["spec"]
    assert "ALLOWED_MOUNT_PATHS" not in env(defaults["containers"][0])


def test_controller_is_two_replicas_behind_a_lease_with_a_disruption_budget() -> None:
    controller = the("defaults", "Deployment", "-controller")
    assert controller["spec"]["replicas"] == 2
    (container,) = controller["spec"]["template"]["spec"]["containers"]
    variables = env(container)
    assert variables["LEADER_ELECTION"] == "true"
    assert variables["POD_NAMESPACE"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    assert controller["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    budget = the("defaults", "PodDisruptionBudget")
    assert budget["spec"]["minAvailable"] == 1
    selector = controller["spec"]["selector"]["matchLabels"]
    assert budget["spec"]["selector"]["matchLabels"] == selector
    lease_role = the("defaults", "Role", "-leader")
    assert {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["create"],
    } in lease_role["rules"]


def test_a_single_controller_has_no_budget_and_no_lease_rights() -> None:
    kinds = {d["kind"] for d in rendered()["single-controller-namespaced"]}
    assert "PodDisruptionBudget" not in kinds
    assert "Role" not in kinds


def test_handlers_are_opt_in_with_the_host_access_each_needs() -> None:
    assert [d["metadata"]["name"] for d in objects("defaults", "DaemonSet")] == [
        "defaults-akri-agent"
    ]
    handlers = {
        d["metadata"]["name"].removeprefix("all-handlers-and-examples-akri-"): d["spec"][
            "template"
        ]["spec"]
        for d in objects("all-handlers-and-examples", "DaemonSet")
    }
    assert set(handlers) == {
        "agent",
        "debugecho-discovery",
        "udev-discovery",
        "onvif-discovery",
        "mdns-discovery",
        "opcua-discovery",
    }
    for name, pod in handlers.items():
        # multicast, or the node's own OPC UA discovery server at localhost
        host_network = name in ("onvif-discovery", "mdns-discovery", "opcua-discovery")
        assert pod.get("hostNetwork", False) is host_network, name
        mounts = {m["mountPath"] for c in pod["containers"] for m in c["volumeMounts"]}
        assert ("/run/udev" in mounts) is (name == "udev-discovery"), name
        if name != "agent":
            assert pod["automountServiceAccountToken"] is False
            assert pod["containers"][0]["command"][:2] == [
                "akri-discovery-handler",
                {
                    "debugecho-discovery": "debugEcho",
                    "udev-discovery": "udev",
                    "onvif-discovery": "onvif",
                    "mdns-discovery": "mdns",
                    "opcua-discovery": "opcua",
                }[name],
            ]
    onvif_env = {
        e["name"]: e.get("value") for e in handlers["onvif-discovery"]["containers"][0]["env"]
    }
    assert onvif_env["ONVIF_INTERFACE_ADDRESS"] == "10.0.0.2"
    assert onvif_env["ONVIF_IPV6_INTERFACE"] == "eth0"


def test_secrets_and_configmaps_are_readable_only_when_enabled_and_in_one_namespace() -> None:
    def agent_resources(combination: str, kind: str) -> set[str]:
        roles = [
            role
            for role in objects(combination, kind)
            if role["metadata"]["labels"]["app.kubernetes.io/component"] == "agent"
        ]
        return {r for role in roles for rule in role["rules"] for r in rule["resources"]}

    for combination in ("defaults", "all-handlers-and-examples"):
        assert not agent_resources(combination, "ClusterRole") & {"secrets", "configmaps"}
    assert not agent_resources("defaults", "Role")
    assert {"secrets", "configmaps"} == agent_resources("all-handlers-and-examples", "Role")
    role = the("all-handlers-and-examples", "Role", "-agent-discovery-properties")
    assert role["metadata"]["namespace"] == "all-handlers-and-examples"  # the release's
    binding = the("all-handlers-and-examples", "RoleBinding", "-agent-discovery-properties")
    assert binding["subjects"] == [{
        "kind": "ServiceAccount", "name": "all-handlers-and-examples-akri-agent",
        "namespace": "all-handlers-and-examples",
    }]  # fmt: skip


DRA_MOUNTS = {
    "/var/lib/kubelet/plugins_registry": "Directory",
    "/var/lib/kubelet/plugins": "DirectoryOrCreate",
    "/var/run/cdi": "DirectoryOrCreate",
}
RESOURCE_GROUP = "resource.k8s.io"


def resource_rules(combination: str, component: str) -> list[dict[str, Any]]:
    role = the(combination, "ClusterRole", f"-{component}")
    return [r for r in role["rules"] if RESOURCE_GROUP in r["apiGroups"]]


def test_device_plugin_mode_has_no_dra_mounts_or_rights() -> None:
    agent = the("defaults", "DaemonSet", "-agent")["spec"]["template"]["spec"]
    assert not {v["hostPath"]["path"] for v in agent["volumes"]} & DRA_MOUNTS.keys()
    assert env(agent["containers"][0])["AKRI_MODE"] == "device-plugin"
    controller = the("defaults", "Deployment", "-controller")["spec"]["template"]["spec"]
    assert env(controller["containers"][0])["AKRI_MODE"] == "device-plugin"
    assert resource_rules("defaults", "agent") == []
    assert resource_rules("defaults", "controller") == []
    nodes = [
        r for r in the("defaults", "ClusterRole", "-agent")["rules"] if "nodes" in r["resources"]
    ]
    assert nodes == []


@pytest.mark.parametrize("combination", ["dra", "dra-auto"])
def test_dra_mode_mounts_the_kubelet_plugin_dirs_and_grants_resource_k8s_io(
    combination: str,
) -> None:
    mode = {"dra": "dra", "dra-auto": "auto"}[combination]
    cdi = {"dra": "/var/run/cdi", "dra-auto": "/etc/cdi"}[combination]
    agent = the(combination, "DaemonSet", "-agent")["spec"]["template"]["spec"]
    (container,) = agent["containers"]
    variables = env(container)
    assert variables["AKRI_MODE"] == mode
    assert variables["PLUGINS_REGISTRY_DIR"] == "/var/lib/kubelet/plugins_registry"
    assert variables["KUBELET_PLUGINS_DIR"] == "/var/lib/kubelet/plugins"
    assert variables["CDI_DIR"] == cdi
    wanted = {**DRA_MOUNTS}
    del wanted["/var/run/cdi"]
    wanted[cdi] = "DirectoryOrCreate"
    volumes = {v["hostPath"]["path"]: v["hostPath"]["type"] for v in agent["volumes"]}
    assert wanted.items() <= volumes.items()
    mounted = {m["mountPath"] for m in container["volumeMounts"]}
    assert wanted.keys() <= mounted
    controller = the(combination, "Deployment", "-controller")["spec"]["template"]["spec"]
    assert env(controller["containers"][0])["AKRI_MODE"] == mode
    assert resource_rules(combination, "agent") == [
        {
            "apiGroups": [RESOURCE_GROUP],
            "resources": ["resourceslices"],
            "verbs": ["list", "watch", "create", "update", "delete"],
        },
        {"apiGroups": [RESOURCE_GROUP], "resources": ["resourceclaims"], "verbs": ["get"]},
    ]
    assert {
        "apiGroups": [""],
        "resources": ["nodes"],
        "verbs": ["get"],
    } in the(combination, "ClusterRole", "-agent")["rules"]
    assert {
        (r["resources"][0], tuple(r["verbs"])) for r in resource_rules(combination, "controller")
    } == {
        ("resourceslices", ("list", "create", "update", "delete")),
        ("deviceclasses", ("get", "list", "create", "update", "delete")),
        ("resourceclaimtemplates", ("list", "watch", "create")),
        ("resourceclaims", ("list", "watch")),
    }


def test_example_configurations_carry_their_values() -> None:
    configurations = {
        c["spec"]["discoveryHandler"]["name"]: Configuration.model_validate(c)
        for c in objects("all-handlers-and-examples", "Configuration")
    }
    assert set(configurations) == {"debugEcho", "udev", "onvif", "mdns", "opcua"}
    echo = configurations["debugEcho"].spec
    assert (echo.capacity, echo.unique_devices) == (2, False)
    assert yaml.safe_load(echo.discovery_handler.discovery_details) == {
        "descriptions": ["foo0", "foo1"]
    }
    assert echo.broker_spec is not None
    assert echo.broker_spec.broker_pod_spec is not None
    (broker,) = echo.broker_spec.broker_pod_spec["containers"]
    assert broker["image"] == "nginx:stable-alpine"
    assert broker["resources"] == {
        "requests": {"cpu": "10m", "{{PLACEHOLDER}}": "1"},
        "limits": {"memory": "64Mi", "{{PLACEHOLDER}}": "1"},
    }
    onvif = configurations["onvif"].spec.discovery_handler
    assert onvif.discovery_properties[0].value_from is not None
    assert yaml.safe_load(configurations["mdns"].spec.discovery_handler.discovery_details)[
        "names"
    ] == {"action": "Include", "items": ["^printer-.*"]}


def test_opcua_example_is_akris_format_and_mounts_client_certificates() -> None:
    (configuration,) = (
        c
        for c in objects("all-handlers-and-examples", "Configuration")
        if c["spec"]["discoveryHandler"]["name"] == "opcua"
    )
    details = configuration["spec"]["discoveryHandler"]["discoveryDetails"]
    parsed = opcua_details(details)  # what the handler and the webhook accept
    assert parsed.discovery_urls == ["opc.tcp://localhost:4840/", "opc.tcp://10.0.0.20:48010/"]
    assert parsed.application_names is not None
    assert parsed.application_names.items == ["Press 1"]
    pod = configuration["spec"]["brokerSpec"]["brokerPodSpec"]
    (broker,) = pod["containers"]
    assert broker["volumeMounts"] == [
        {"name": "opcua-client-pki", "mountPath": "/etc/opcua-certs/client-pki", "readOnly": True}
    ]
    (volume,) = pod["volumes"]
    assert volume["secret"]["secretName"] == "opcua-broker-credentials"
    assert {i["key"]: i["path"] for i in volume["secret"]["items"]} == {
        "client_certificate": "own/certs/AkriBroker.der",
        "client_key": "own/private/AkriBroker.pfx",
        "ca_certificate": "trusted/certs/SomeCA.der",
        "ca_crl": "trusted/crl/SomeCA.crl",
    }
    others = [
        c
        for c in objects("all-handlers-and-examples", "Configuration")
        if c["spec"]["discoveryHandler"]["name"] != "opcua"
    ]
    assert all("volumes" not in c["spec"]["brokerSpec"]["brokerPodSpec"] for c in others)


def test_monitoring_scrapes_both_components() -> None:
    monitors = {d["metadata"]["name"] for d in objects("monitoring", "ServiceMonitor")}
    assert monitors == {"monitoring-akri-agent", "monitoring-akri-controller"}
    (pod_monitor,) = objects("monitoring", "PodMonitor")
    assert pod_monitor["spec"]["podMetricsEndpoints"][0]["port"] == "metrics"


REFUSED = {
    "unknown-key": (
        {"agent": {"devicePluginDir": "/x"}},
        "at '/agent': additional properties 'devicePluginDir' not allowed",
    ),
    "wrong-type": (
        {"controller": {"replicas": "two"}},
        "at '/controller/replicas': got string, want integer",
    ),
    "zero-capacity": (
        {"examples": {"udev": {"capacity": 0}}},
        "at '/examples/udev/capacity': minimum: got 0, want 1",
    ),
    "bad-duration": ({"agent": {"offlineGrace": "five minutes"}}, "at '/agent/offlineGrace'"),
    "relative-path": ({"agent": {"devicePluginsDir": "var/lib"}}, "at '/agent/devicePluginsDir'"),
    "unknown-top-level": ({"agnet": {}}, "additional properties 'agnet' not allowed"),
    "unknown-mode": ({"mode": "kubelet"}, "at '/mode'"),
    "opcua-interval-too-short": (
        {"examples": {"opcua": {"discoveryIntervalSeconds": 0.5}}},
        "at '/examples/opcua/discoveryIntervalSeconds': minimum: got 0.5, want 1",
    ),
    "opcua-not-opc-tcp": (
        {"examples": {"opcua": {"discoveryUrls": ["http://plc/"]}}},
        "at '/examples/opcua/discoveryUrls/0'",
    ),
    "opcua-certificates-without-brokers": (
        {"examples": {"opcua": {"enabled": True, "mountCertificates": True}}},
        "examples.opcua.mountCertificates mounts into brokers: set examples.opcua.brokerImage",
    ),
    "two-acting-controllers": (
        {"controller": {"leaderElection": {"enabled": False}}},
        "controller.replicas > 1 needs controller.leaderElection.enabled",
    ),
}


def test_bad_values_are_refused_with_a_message_naming_the_value() -> None:
    results = render([{"release": name, "values": v} for name, (v, _) in REFUSED.items()])
    for name, (_, message) in REFUSED.items():
        assert message in results[name].get("error", ""), f"{name}: {results[name]}"


INFO = 1  # Helm's lint severities: 1 info, 2 warning, 4 error


def test_helm_lint_finds_nothing_to_fix() -> None:
    result = lint()
    assert result["Errors"] is None
    assert [m for m in result["Messages"] if m["Severity"] > INFO] == []


def test_the_webhook_is_registered_with_a_certificate_the_controller_keeps() -> None:
    (registration,) = objects("defaults", "ValidatingWebhookConfiguration")
    (hook,) = registration["webhooks"]
    assert hook["failurePolicy"] == "Fail"
    assert hook["rules"][0]["resources"] == ["configurations"]
    assert hook["clientConfig"]["service"]["name"] == "defaults-akri-webhook"
    assert "caBundle" not in hook["clientConfig"], "the controller puts its CA there"
    secret = the("defaults", "Secret", "-webhook-tls")
    assert "data" not in secret, "created empty, filled by the controller"
    controller = the("defaults", "Deployment", "-controller")["spec"]["template"]["spec"]
    assert controller["volumes"] == [
        {"name": "webhook-tls", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}
    ]
    variables = env(controller["containers"][0])
    assert variables["WEBHOOK_PORT"] == "8443"
    assert variables["WEBHOOK_CERT_SECRET"] == "defaults-akri-webhook-tls"
    assert variables["WEBHOOK_CONFIGURATION"] == registration["metadata"]["name"]
    assert variables["WEBHOOK_SERVICE"] == "defaults-akri-webhook"
    assert variables["WEBHOOK_CERT_VALIDITY"] == "8760h"
    role = the("defaults", "Role", "-controller-webhook")
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["defaults-akri-webhook-tls"],
            "verbs": ["get", "update"],
        }
    ]
    assert {
        "apiGroups": ["admissionregistration.k8s.io"],
        "resources": ["validatingwebhookconfigurations"],
        "resourceNames": [registration["metadata"]["name"]],
        "verbs": ["get", "update"],
    } in the("defaults", "ClusterRole", "-controller")["rules"]


def test_cert_manager_makes_the_certificate_when_asked() -> None:
    kinds = {d["kind"] for d in rendered()["cert-manager"]}
    assert {"Issuer", "Certificate"} <= kinds
    assert "Secret" not in kinds
    (registration,) = objects("cert-manager", "ValidatingWebhookConfiguration")
    annotation = registration["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert annotation == "cert-manager/cert-manager-akri-webhook"
    assert registration["webhooks"][0]["failurePolicy"] == "Ignore"  # the escape hatch
    assert "caBundle" not in registration["webhooks"][0]["clientConfig"]
    controller = the("cert-manager", "Deployment", "-controller")["spec"]["template"]["spec"]
    assert controller["volumes"] == [
        {"name": "webhook-tls", "secret": {"secretName": "cert-manager-akri-webhook-tls"}}
    ]
    assert "WEBHOOK_CERT_SECRET" not in env(controller["containers"][0])
    assert not [
        r for r in objects("cert-manager", "Role") if r["metadata"]["name"].endswith("-webhook")
    ], "no Secret rights when cert-manager makes it"


def test_no_webhook_when_disabled() -> None:
    kinds = {d["kind"] for d in rendered()["single-controller-namespaced"]}
    assert not kinds & {"ValidatingWebhookConfiguration", "Secret"}
    controller = the("single-controller-namespaced", "Deployment")["spec"]["template"]["spec"]
    assert "volumes" not in controller


def test_examples_are_applied_by_a_hook_once_the_webhook_serves() -> None:
    """The webhook fails closed, so the examples are not created with the controller: a
    post-install/upgrade hook Job applies them from a ConfigMap, retrying until admitted."""
    job = the("debug-echo-embedded", "Job", "-examples")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"][:3] == ["akri", "apply", "/etc/akri/examples/configurations.yaml"]
    role = the("debug-echo-embedded", "Role", "-examples")
    assert role["rules"][0] == {
        "apiGroups": ["akri.sh"], "resources": ["configurations"],
        "verbs": ["get", "create", "update"],
    }  # fmt: skip
    assert not [
        d for d in objects("defaults", "Job") if d["metadata"]["name"].endswith("-examples")
    ]


def test_admission_policies_name_the_agent_account_and_trust_no_namespace() -> None:
    policies = {p["metadata"]["name"]: p for p in objects("defaults", "ValidatingAdmissionPolicy")}
    agent = policies["defaults-akri-agent-instances"]["spec"]
    assert agent["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:defaults:defaults-akri-agent'"
    )
    (trusted,) = [v for v in policies["defaults-akri-broker-pods"]["spec"]["variables"]
                  if v["name"] == "trusted"]  # fmt: skip
    assert trusted["expression"] == "request.namespace in []"
    bindings = {
        b["spec"]["policyName"] for b in objects("defaults", "ValidatingAdmissionPolicyBinding")
    }
    assert bindings == set(policies)
