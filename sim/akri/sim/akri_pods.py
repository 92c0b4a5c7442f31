"""akri as a cluster runs it, for `akri sim --workloads processes`: the agent DaemonSet and the
controller Deployment of the project's image, whose pods the simulated kubelets run as
processes with in-cluster credentials. The Helm chart (helm/akri) is the full form of these."""

from __future__ import annotations

from typing import Any

from akri.sim.kubelet.runtime.spec import DEFAULT_SIM_IMAGE

JSON = dict[str, Any]
NAMESPACE = "akri"
ACCOUNT = "akri"
_ACCESS: list[JSON] = [
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": NAMESPACE},
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "akri-sim"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "akri-sim"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "akri-sim",
        },
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    },
]
"""One account for both programs, allowed everything: the chart grants each only what it uses."""


def _host(name: str, path: str) -> tuple[JSON, JSON]:
    """A hostPath volume and its mount at the same path."""
    volume = {"name": name, "hostPath": {"path": path, "type": "DirectoryOrCreate"}}
    return volume, {"name": name, "mountPath": path}


def _workload(kind: str, name: str, container: JSON, volumes: list[JSON], **spec: Any) -> JSON:
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
        "spec": {
            **spec,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": ACCOUNT,
                    "containers": [container],
                    "volumes": volumes,
                },
            },
        },
    }


def akri_workloads(image: str = DEFAULT_SIM_IMAGE, *, offline_grace_s: float) -> list[JSON]:
    """The namespace, the account, the agent DaemonSet (debugEcho embedded), the controller."""
    mounts = [
        _host("device-plugins", "/var/lib/kubelet/device-plugins"),
        _host("pod-resources", "/var/lib/kubelet/pod-resources"),
        _host("discovery-handlers", "/var/lib/akri"),
    ]
    node_name = {"fieldRef": {"fieldPath": "spec.nodeName"}}
    agent = {
        "name": "agent",
        "image": image,
        "command": ["akri-agent"],
        "env": [
            {"name": "AGENT_NODE_NAME", "valueFrom": node_name},
            {"name": "ENABLE_DEBUG_ECHO", "value": "true"},
            {"name": "OFFLINE_GRACE", "value": f"{offline_grace_s:g}s"},
            {"name": "METRICS_PORT", "value": "0"},
        ],
        "volumeMounts": [mount for _, mount in mounts],
    }
    controller = {
        "name": "controller",
        "image": image,
        "command": ["akri-controller"],
        "env": [{"name": "METRICS_PORT", "value": "0"}],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        *_ACCESS,
        _workload("DaemonSet", "akri-agent", agent, [volume for volume, _ in mounts]),
        _workload("Deployment", "akri-controller", controller, [], replicas=1),
    ]
