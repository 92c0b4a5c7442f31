"""kubectl's generators (`kubectl create <kind>`, `kubectl run`) send protobuf; each must work.

Each case runs the real kubectl against the cluster, reads the object back as JSON and checks
the fields the command set, so a wrong field number or a lost zero shows up as a mismatch.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.kubectl import Kubectl, needs_kubectl

pytestmark = needs_kubectl

Case = Callable[[str], tuple[list[str], str, dict[str, Any]]]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


CASES: dict[str, Case] = {
    "namespace": lambda ns: (
        ["create", "namespace", f"{ns}-x"],
        f"namespace/{ns}-x",
        {"metadata": {"name": f"{ns}-x"}, "status": {"phase": "Active"}},
    ),
    "secret": lambda ns: (
        [
            "create",
            "secret",
            "generic",
            "auth",
            "--from-literal=user=admin",
            "--from-literal=empty=",
        ],
        "secret/auth",
        {"type": "Opaque", "data": {"user": _b64("admin"), "empty": ""}},
    ),
    "configmap": lambda ns: (
        ["create", "configmap", "settings", "--from-literal=mode=fast"],
        "configmap/settings",
        {"data": {"mode": "fast"}},
    ),
    "serviceaccount": lambda ns: (
        ["create", "serviceaccount", "robot"],
        "serviceaccount/robot",
        {"metadata": {"name": "robot", "namespace": ns}},
    ),
    "service": lambda ns: (
        ["create", "service", "clusterip", "web", "--tcp=80:8080"],
        "service/web",
        {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": "web"},
                "ports": [{"name": "80-8080", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
            },
        },
    ),
    "deployment": lambda ns: (
        ["create", "deployment", "idle", "--image=busybox", "--replicas=0", "--port=80"],
        "deployment/idle",
        {
            "spec": {
                "replicas": 0,
                "selector": {"matchLabels": {"app": "idle"}},
                "template": {
                    "metadata": {"labels": {"app": "idle"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "busybox",
                                "image": "busybox",
                                "ports": [{"containerPort": 80}],
                            }
                        ]
                    },
                },
            }
        },
    ),
    "job": lambda ns: (
        ["create", "job", "once", "--image=busybox", "--", "echo", "hi"],
        "job/once",
        {
            "spec": {
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {"name": "once", "image": "busybox", "command": ["echo", "hi"]}
                        ],
                    }
                }
            }
        },
    ),
    "role": lambda ns: (
        [
            "create",
            "role",
            "reader",
            "--verb=get",
            "--verb=list",
            "--resource=pods,configmaps",
            "--resource-name=one",
        ],
        "role/reader",
        {
            "rules": [
                {
                    "verbs": ["get", "list"],
                    "apiGroups": [""],
                    "resources": ["pods", "configmaps"],
                    "resourceNames": ["one"],
                },
            ]
        },
    ),
    "rolebinding": lambda ns: (
        [
            "create",
            "rolebinding",
            "readers",
            "--role=reader",
            f"--serviceaccount={ns}:robot",
            "--user=alice",
        ],
        "rolebinding/readers",
        {
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [
                {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"},
                {"kind": "ServiceAccount", "name": "robot", "namespace": ns},
            ],
        },
    ),
    "clusterrolebinding": lambda ns: (
        ["create", "clusterrolebinding", f"{ns}-view", "--clusterrole=view", "--group=team"],
        f"clusterrolebinding/{ns}-view",
        {
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "team"}],
        },
    ),
    "poddisruptionbudget": lambda ns: (
        ["create", "poddisruptionbudget", "keep", "--selector=app=web", "--min-available=50%"],
        "poddisruptionbudget/keep",
        {"spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}},
    ),
    "priorityclass": lambda ns: (
        ["create", "priorityclass", f"{ns}-zero", "--value=0", "--description=lowest"],
        f"priorityclass/{ns}-zero",
        {"value": 0, "description": "lowest", "preemptionPolicy": "PreemptLowerPriority"},
    ),
    "run": lambda ns: (
        [
            "run",
            "shell",
            "--image=busybox",
            "--restart=Never",
            "--env=A=1",
            "--port=8080",
            "--labels=app=shell,tier=x",
            "--",
            "sleep",
            "5",
        ],
        "pod/shell",
        {
            "metadata": {"labels": {"app": "shell", "tier": "x"}},
            "spec": {
                "restartPolicy": "Never",
                "containers": [
                    {
                        "name": "shell",
                        "image": "busybox",
                        "args": ["sleep", "5"],
                        "env": [{"name": "A", "value": "1"}],
                        "ports": [{"containerPort": 8080}],
                    }
                ],
            },
        },
    ),
}


CLUSTER_SCOPED = ("namespace/", "clusterrolebinding/", "priorityclass/")


def contains(actual: Any, expected: Any) -> bool:
    """`expected` is `actual` with some mapping keys left out."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            key in actual and contains(actual[key], value) for key, value in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(contains(a, e) for a, e in zip(actual, expected, strict=True))
        )
    return bool(actual == expected and type(actual) is type(expected))


async def test_kubectl_generators_create_objects(kubectl: Kubectl, namespace: str) -> None:
    """All cases against one cluster (kubectl's discovery is the slow part); all reported."""
    cases = {name: case(namespace) for name, case in sorted(CASES.items())}
    cluster_scoped = [ref for _, ref, _ in cases.values() if ref.startswith(CLUSTER_SCOPED)]
    try:
        for args, _, _ in cases.values():
            assert "created" in await kubectl(*args)
        listed = json.loads(
            await kubectl("get", *(ref for _, ref, _ in cases.values()), "-o", "json")
        )
        found = dict(zip(cases, listed["items"], strict=True))
        wrong = {
            name: found[name]
            for name, (_, _, expected) in cases.items()
            if not contains(found[name], expected)
        }
        assert not wrong, json.dumps(wrong, indent=1)
    finally:
        if cluster_scoped:
            await kubectl("delete", "--ignore-not-found", "--wait=false", *cluster_scoped)


async def test_kubectl_configmap_from_a_binary_file(kubectl: Kubectl, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xff\x00\xfe")
    text = tmp_path / "note.txt"
    text.write_text("hello")
    await kubectl("create", "configmap", "files", f"--from-file={blob}", f"--from-file={text}")
    obj = json.loads(await kubectl("get", "configmap", "files", "-o", "json"))
    assert obj["binaryData"] == {"blob.bin": base64.b64encode(b"\xff\x00\xfe").decode()}
    assert obj["data"] == {"note.txt": "hello"}
