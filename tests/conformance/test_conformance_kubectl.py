"""kubectl round trips: what a person does against `akri sim` must work as on a real cluster."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from akri.kube.events import record_event
from tests.conformance.support import (
    DEADLINE_S,
    GROUP,
    PLURAL,
    VERSION,
    WIDGET_CRD,
    raw_get,
)
from tests.kubectl import Kubectl, needs_kubectl

pytestmark = needs_kubectl


@pytest.fixture
async def applied_crd(kubectl: Kubectl, tmp_path: Path) -> AsyncIterator[Path]:
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(WIDGET_CRD))
    assert "created" in await kubectl("apply", "-f", str(path))
    await kubectl("wait", "--for=condition=Established", f"crd/{PLURAL}.{GROUP}")
    yield path
    await kubectl("delete", "-f", str(path))


def write_widget(path: Path, color: str, capacity: int) -> Path:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Widget",
        "metadata": {"name": "w1"},
        "spec": {"color": color, "capacity": capacity},
    }
    path.write_text(yaml.safe_dump(body))
    return path


async def test_get_and_describe_nodes_and_namespaces(
    kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": f"node-{namespace}"},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "nodeInfo": {"kubeletVersion": "v1.32.0"},
        },
    }
    manifest = tmp_path / "node.yaml"
    manifest.write_text(yaml.safe_dump(node))
    await kubectl("apply", "-f", str(manifest))
    try:
        out = await kubectl("get", "nodes,ns")
        assert f"namespace/{namespace}" in out
        assert "Active" in out
        assert f"node/node-{namespace}" in out
        described = await kubectl("describe", "node", f"node-{namespace}")
        assert "KubeletReady" in described
    finally:
        await kubectl("delete", "-f", str(manifest))


async def test_apply_get_patch_describe_delete_a_custom_object(
    kubectl: Kubectl, applied_crd: Path, tmp_path: Path
) -> None:
    manifest = write_widget(tmp_path / "w1.yaml", "red", 2)
    assert "created" in await kubectl("apply", "-f", str(manifest))
    table = (await kubectl("get", "widgets")).splitlines()
    assert table[0].split() == ["NAME", "COLOR", "CAPACITY", "AGE"]
    assert table[1].split()[:3] == ["w1", "red", "2"]

    write_widget(manifest, "blue", 2)
    assert "configured" in await kubectl("apply", "-f", str(manifest))
    await kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"capacity":4}}')
    shown = await kubectl("get", "wdg", "w1", "-o", "jsonpath={.spec.color}/{.spec.capacity}")
    assert shown == "blue/4"

    write_widget(manifest, "green", 2)
    refused = await kubectl("apply", "-f", str(manifest), ok=False)
    assert "spec.color" in refused

    described = await kubectl("describe", "widget", "w1")
    assert "Capacity:  4" in described
    assert "Events:" in described
    assert "deleted" in await kubectl("delete", "widget", "w1")
    assert await kubectl("get", "widgets", "-o", "name") == ""


async def test_strategic_patch_and_describe_of_builtins(
    kubectl: Kubectl, tmp_path: Path, namespace: str
) -> None:
    container = {"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d1", "labels": {"app": "demo"}},
        "spec": {  # no replicas: the spec may change and nothing runs
            "replicas": 0,
            "selector": {"matchLabels": {"app": "demo"}},
            "template": {
                "metadata": {"labels": {"app": "demo"}},
                "spec": {"containers": [container]},
            },
        },
    }
    manifest = tmp_path / "deployment.yaml"
    manifest.write_text(yaml.safe_dump(deployment))
    await kubectl("apply", "-f", str(manifest))
    deployment["metadata"]["labels"] = {"app": "demo", "tier": "web"}  # type: ignore[index]
    manifest.write_text(yaml.safe_dump(deployment))
    assert "configured" in await kubectl("apply", "-f", str(manifest))
    containers = [{"name": "c", "env": [{"name": "B", "value": "2"}]}]
    patch = json.dumps({"spec": {"template": {"spec": {"containers": containers}}}})
    await kubectl("patch", "deployment", "d1", "-p", patch)
    env = await kubectl(
        "get", "deployment", "d1", "-o", "jsonpath={.spec.template.spec.containers[0].env[*].name}"
    )
    assert env == "B A"  # a strategic merge puts the patch's new item first
    assert "d1" in await kubectl("get", "deployments", "-l", "tier=web")
    described = await kubectl("describe", "deployment", "d1")
    assert "busybox" in described
    assert ["Namespace:", namespace] in [line.split() for line in described.splitlines()]


async def test_get_watch_receives_a_change(
    kubectl: Kubectl, applied_crd: Path, tmp_path: Path
) -> None:
    await kubectl("apply", "-f", str(write_widget(tmp_path / "w1.yaml", "red", 1)))
    watcher = await kubectl.spawn("get", "widgets", "-w", "--no-headers")
    assert watcher.stdout is not None
    try:
        async with asyncio.timeout(DEADLINE_S):
            first = (await watcher.stdout.readline()).decode()
            assert first.split()[:3] == ["w1", "red", "1"]
            await kubectl("patch", "widget", "w1", "--type=merge", "-p", '{"spec":{"capacity":7}}')
            second = (await watcher.stdout.readline()).decode()
        assert second.split()[:3] == ["w1", "red", "7"]
    finally:
        watcher.kill()
        await watcher.wait()


async def test_events_show_when_they_were_last_seen(
    kubectl: Kubectl, api: client.ApiClient, namespace: str
) -> None:
    """Events written by akri-py (lastTimestamp) and by newer clients (eventTime only)."""
    core = client.CoreV1Api(api)
    involved = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": namespace},
    }
    await record_event(core, involved, "Recorded", "by akri-py", component="test")
    modern: Any = {
        "metadata": {"name": "cm.modern"},
        "involvedObject": {"kind": "ConfigMap", "name": "cm", "namespace": namespace},
        "reason": "Modern",
        "message": "eventTime only",
        "type": "Normal",
        "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "reportingComponent": "test",
        "reportingInstance": "test-1",
        "action": "Test",
    }
    await core.create_namespaced_event(namespace, modern)

    rows = (await kubectl("get", "events", "--no-headers")).splitlines()

    assert len(rows) == 2
    assert all(row.split()[0].endswith("s") for row in rows), rows
    response = await raw_get(
        api,
        f"/api/v1/namespaces/{namespace}/events",
        {"fieldSelector": "reason=Recorded"},
    )
    (body,) = json.loads(await response.read())["items"]
    response.release()
    for field in ("firstTimestamp", "lastTimestamp"):
        datetime.strptime(body[field], "%Y-%m-%dT%H:%M:%SZ")  # to the second, in UTC
