"""Controller fixtures: Configurations and Instances written as users and agents write them,
fake device plugins standing in for the agent, and a running controller."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.api import Configuration, Instance, new_instance
from akri.controller.context import Tuning
from akri.controller.controller import Controller
from akri.controller.metrics import ControllerMetrics
from akri.sim.cluster import Cluster
from akri.sim.kubelet.objects import node_status
from tests.kubelet.plugin import FakePlugin, device
from tests.support import running as background

NAMESPACE = "default"
BROKER_IMAGE = "nginx:stable"
MERGE_PATCH: dict[str, Any] = {"_content_type": "application/merge-patch+json"}


def pod_spec(*, init: bool = False) -> dict[str, Any]:
    resources = {"limits": {naming.PLACEHOLDER: "1"}, "requests": {naming.PLACEHOLDER: "1"}}
    spec: dict[str, Any] = {
        "containers": [{"name": "broker", "image": BROKER_IMAGE, "resources": resources}]
    }
    if init:
        spec["initContainers"] = [{"name": "setup", "image": "busybox", "resources": resources}]
    return spec


def configuration_body(
    name: str,
    *,
    namespace: str = NAMESPACE,
    broker_pod_spec: dict[str, Any] | None = None,
    broker_job_spec: dict[str, Any] | None = None,
    services: bool = False,
    capacity: int = 2,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"discoveryHandler": {"name": "debugEcho"}, "capacity": capacity}
    if broker_pod_spec is not None:
        spec["brokerSpec"] = {"brokerPodSpec": broker_pod_spec}
    if broker_job_spec is not None:
        spec["brokerSpec"] = {"brokerJobSpec": broker_job_spec}
    if services:
        ports = [{"name": "grpc", "port": 8083, "targetPort": 8083}]
        spec["instanceServiceSpec"] = {"type": "ClusterIP", "ports": ports}
        spec["configurationServiceSpec"] = {"type": "ClusterIP", "ports": ports}
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


async def create_configuration(api: client.ApiClient, body: dict[str, Any]) -> Configuration:
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, body["metadata"]["namespace"], "configurations", body
    )
    return Configuration.from_wire(created)


async def create_instance(
    api: client.ApiClient,
    configuration: Configuration,
    device_id: str,
    nodes: Sequence[str],
    *,
    shared: bool = True,
    properties: dict[str, str] | None = None,
) -> Instance:
    """The Instance agents on `nodes` would write for a device they all see."""
    instance = new_instance(
        configuration, device_id, nodes[0], shared=shared, properties=properties or {}
    )
    instance.spec.nodes = list(nodes)
    custom = client.CustomObjectsApi(api)
    created = await custom.create_namespaced_custom_object(
        naming.GROUP,
        naming.VERSION,
        configuration.metadata.namespace or NAMESPACE,
        "instances",
        instance.to_wire(),
    )
    return Instance.from_wire(created)


async def patch(
    api: client.ApiClient, plural: str, name: str, body: dict[str, Any], namespace: str = NAMESPACE
) -> dict[str, Any]:
    """A merge patch of a custom object, as `kubectl patch --type merge` sends it."""
    patched: dict[str, Any] = await client.CustomObjectsApi(api).patch_namespaced_custom_object(
        naming.GROUP, naming.VERSION, namespace, plural, name, body, **MERGE_PATCH
    )
    return patched


async def read_instance(api: client.ApiClient, name: str) -> dict[str, Any] | None:
    custom = client.CustomObjectsApi(api)
    try:
        found: dict[str, Any] = await custom.get_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", name
        )
    except client.exceptions.ApiException as error:
        if error.status == 404:
            return None
        raise
    return found


async def pods(api: client.ApiClient, namespace: str = NAMESPACE) -> dict[str, Any]:
    """Broker Pods by name."""
    listed = await client.CoreV1Api(api).list_namespaced_pod(
        namespace, label_selector=f"{naming.LABEL_CONTROLLER}={naming.CONTROLLER_LABEL_VALUE}"
    )
    return {pod.metadata.name: pod for pod in listed.items}


async def services(api: client.ApiClient, namespace: str = NAMESPACE) -> set[str]:
    listed = await client.CoreV1Api(api).list_namespaced_service(namespace)
    return {service.metadata.name for service in listed.items}


async def events(api: client.ApiClient, name: str, namespace: str = NAMESPACE) -> list[Any]:
    listed = await client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={name}"
    )
    return list(listed.items)


FAST = Tuning(node_grace=0.5, backoff_initial=0.05, backoff_max=0.4, workers=4)


@contextlib.asynccontextmanager
async def running(api: client.ApiClient, tuning: Tuning = FAST) -> AsyncIterator[Controller]:
    controller = Controller(api, tuning, metrics=ControllerMetrics())
    async with background(controller.run()):
        yield controller


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster(["node-0", "node-1"], workdir=socket_dir) as running_cluster:
        yield running_cluster


class Plugins:
    """Fake device plugins standing in for the agent: `akri.sh/<instance>` on chosen nodes."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster
        self.started: dict[tuple[str, str], FakePlugin] = {}

    async def offer(self, instance: Instance, nodes: Iterable[str], capacity: int = 2) -> None:
        name = instance.metadata.name or ""
        for node_name in nodes:
            node = self._cluster.nodes[node_name]
            slots = [device(naming.slot_id(name, i)) for i in range(capacity)]
            plugin = FakePlugin(node.device_plugins_dir, naming.resource_name(name), slots)
            await plugin.start(node.kubelet.socket)
            self.started[(node_name, name)] = plugin

    async def stop(self) -> None:
        for plugin in self.started.values():
            await plugin.stop()


@pytest.fixture
async def plugins(cluster: Cluster) -> AsyncIterator[Plugins]:
    started = Plugins(cluster)
    yield started
    await started.stop()


async def ready_node(api: client.ApiClient, name: str) -> None:
    """A Node object reporting Ready, as a kubelet would publish it (no kubelet behind it)."""
    core = client.CoreV1Api(api)
    await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=name)))
    now = "2026-01-01T00:00:00Z"
    status = node_status({}, (), ready=True, heartbeat=now, transition=now)
    await core.patch_node_status(name, {"status": status})


async def shared_slices(api: client.ApiClient) -> list[dict[str, Any]]:
    """The ResourceSlices of shared pools (per-device node selection)."""
    listed = await client.CustomObjectsApi(api).list_cluster_custom_object(
        "resource.k8s.io", "v1", "resourceslices"
    )
    return [s for s in listed["items"] if s["spec"].get("perDeviceNodeSelection")]


class Writes:
    """Counts one client's writes (any method but GET) by method and path."""

    def __init__(self, api: client.ApiClient) -> None:
        self.paths: list[tuple[str, str]] = []
        original = api.rest_client.request

        async def request(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
            if method.upper() != "GET":
                self.paths.append((method.upper(), url))
            return await original(method, url, *args, **kwargs)

        api.rest_client.request = request  # type: ignore[method-assign]  # a test spy

    def count(self, method: str, fragment: str) -> int:
        return sum(1 for m, url in self.paths if m == method and fragment in url)
