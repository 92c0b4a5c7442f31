"""The node bridge: a kubelet emulator published to the API server emulator."""

from __future__ import annotations

import asyncio
import functools
import json
import shutil
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from akri.kube.reflector import Key, Object, Reflector
from akri.sim.apiserver import ApiServer
from akri.sim.kubelet import Kubelet
from akri.sim.kubelet.changes import Changes
from akri.sim.kubelet.node import LEASE_DURATION_S, LEASE_NAMESPACE, NodeBridge
from akri.sim.kubelet.objects import ALLOCATIONS_ANNOTATION
from akri.sim.kubelet.runtime.pod import NodeHost, RuntimeSettings
from akri.sim.kubelet.runtime.processes import Processes
from akri.sim.podnet.addresses import NodeNetwork, NoPodAddress
from tests.kubelet.plugin import FakePlugin, device

RESOURCE = "akri.sh/cam"
NODE = "node-a"
WAIT_S = 10.0


class Follow:
    """The test's own view of one kind, to wait on the API state without polling."""

    def __init__(self, reflector_of: Callable[[Any], Reflector]) -> None:
        self.changes = Changes()
        self.reflector = reflector_of(self._changed)
        self._task = asyncio.create_task(self.reflector.run(), name="test-follow")

    async def _changed(self, _kind: str, _obj: Object) -> None:
        self.changes.notify()

    async def until(self, condition: Callable[[dict[Key, Object]], bool]) -> None:
        async with asyncio.timeout(WAIT_S):
            await self.changes.wait_for(lambda: condition(self.reflector.objects))

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)


@pytest.fixture
async def api(socket_dir: Path) -> AsyncIterator[client.ApiClient]:
    async with ApiServer() as server:
        kubeconfig = server.write_kubeconfig(socket_dir / "kubeconfig")
        api = await config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
        async with api:
            yield api


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
async def plugin(kubelet: Kubelet) -> AsyncIterator[FakePlugin]:
    fake = FakePlugin(kubelet.device_plugins_dir, RESOURCE, [device("a"), device("b", False)])
    await fake.start(kubelet.socket)
    yield fake
    await fake.stop()


@pytest.fixture
async def bridge(kubelet: Kubelet, api: client.ApiClient) -> AsyncIterator[None]:
    task = asyncio.create_task(NodeBridge(kubelet, api).run(), name="bridge")
    yield
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.fixture
async def nodes(core: client.CoreV1Api) -> AsyncIterator[Follow]:
    follow = Follow(lambda handler: Reflector(core.list_node, handler))
    yield follow
    await follow.stop()


@pytest.fixture
async def pods(core: client.CoreV1Api) -> AsyncIterator[Follow]:
    follow = Follow(lambda handler: Reflector(core.list_pod_for_all_namespaces, handler))
    yield follow
    await follow.stop()


def node_has(condition: Callable[[Object], bool]) -> Callable[[dict[Key, Object]], bool]:
    return lambda objects: ("", NODE) in objects and condition(objects[("", NODE)])


def ready(node: Object) -> str | None:
    conditions = (node.get("status") or {}).get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == "Ready"), None)


def phase_of(name: str, phase: str) -> Callable[[dict[Key, Object]], bool]:
    def check(objects: dict[Key, Object]) -> bool:
        pod = objects.get(("default", name))
        return pod is not None and (pod.get("status") or {}).get("phase") == phase

    return check


async def create_pod(core: client.CoreV1Api, name: str, count: int = 1) -> None:
    container = client.V1Container(
        name="main",
        image="busybox",
        resources=client.V1ResourceRequirements(limits={RESOURCE: str(count)}),
    )
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(node_name=NODE, containers=[container]),
    )
    await core.create_namespaced_pod("default", body)


@pytest.mark.usefixtures("plugin", "bridge")
async def test_the_node_is_ready_with_its_device_capacity(nodes: Follow) -> None:
    await nodes.until(
        node_has(lambda n: (n.get("status") or {}).get("allocatable", {}).get(RESOURCE) == "1")
    )
    node = nodes.reflector.objects[("", NODE)]
    assert node["status"]["capacity"][RESOURCE] == "2"
    assert ready(node) == "True"


@pytest.mark.usefixtures("bridge")
async def test_pods_run_with_their_allocations_fail_admission_or_free_ids_when_deleted(
    kubelet: Kubelet, plugin: FakePlugin, core: client.CoreV1Api, nodes: Follow, pods: Follow
) -> None:
    await nodes.until(node_has(lambda n: (n.get("status") or {}).get("capacity", {}) != {}))
    await create_pod(core, "p1")
    await pods.until(phase_of("p1", "Running"))
    first = pods.reflector.objects[("default", "p1")]
    recorded = json.loads(first["metadata"]["annotations"][ALLOCATIONS_ANNOTATION])
    assert recorded["main"][RESOURCE]["ids"] == ["a"]
    assert recorded["main"][RESOURCE]["envs"] == {"DEVICES": "a"}
    assert plugin.allocate_requests == [["a"]]

    await create_pod(core, "p2")
    await pods.until(phase_of("p2", "Failed"))
    status = pods.reflector.objects[("default", "p2")]["status"]
    assert status["reason"] == "UnexpectedAdmissionError"
    assert "requested number of devices unavailable" in status["message"]

    await core.delete_namespaced_pod("p1", "default")
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: first["metadata"]["uid"] not in kubelet.pods)


@pytest.mark.usefixtures("bridge")
async def test_pods_bound_while_the_kubelet_is_down_are_admitted_when_it_is_back(
    kubelet: Kubelet, plugin: FakePlugin, core: client.CoreV1Api, nodes: Follow, pods: Follow
) -> None:
    """Back before its plugin re-registers, the kubelet rejects them (Akri #849's pod spam)."""
    await nodes.until(node_has(lambda n: ready(n) == "True"))
    await kubelet.stop()
    await nodes.until(node_has(lambda n: ready(n) == "Unknown"))
    await create_pod(core, "early")
    await kubelet.start()
    await pods.until(phase_of("early", "Failed"))
    assert "Available: 0" in pods.reflector.objects[("default", "early")]["status"]["message"]

    await plugin.start(kubelet.socket)
    await nodes.until(node_has(lambda n: n["status"]["allocatable"][RESOURCE] == "1"))
    await create_pod(core, "late")
    await pods.until(phase_of("late", "Running"))
    assert plugin.allocate_requests == [["a"]]


async def test_the_node_lease_is_renewed_while_the_kubelet_runs(
    kubelet: Kubelet, api: client.ApiClient, socket_dir: Path
) -> None:
    leases = client.CoordinationV1Api(api)
    follow = Follow(
        lambda handler: Reflector(
            functools.partial(leases.list_namespaced_lease, LEASE_NAMESPACE), handler
        )
    )
    task = asyncio.create_task(NodeBridge(kubelet, api, heartbeat_s=0.1).run(), name="bridge")
    try:
        await follow.until(lambda objects: (LEASE_NAMESPACE, NODE) in objects)
        lease = follow.reflector.objects[(LEASE_NAMESPACE, NODE)]
        assert lease["spec"]["holderIdentity"] == NODE
        assert lease["spec"]["leaseDurationSeconds"] == LEASE_DURATION_S
        assert [o["kind"] for o in lease["metadata"]["ownerReferences"]] == ["Node"]
        first = lease["spec"]["renewTime"]
        await follow.until(
            lambda objects: objects[(LEASE_NAMESPACE, NODE)]["spec"]["renewTime"] != first
        )

        if shutil.which("kubectl") is not None:
            process = await asyncio.create_subprocess_exec(
                "kubectl", "describe", "node", NODE,
                env={"KUBECONFIG": str(socket_dir / "kubeconfig"), "HOME": str(socket_dir)},
                stdout=asyncio.subprocess.PIPE,
            )  # fmt: skip
            async with asyncio.timeout(WAIT_S):
                out, _ = await process.communicate()
            described = out.decode()
            assert ["HolderIdentity:", NODE] in [line.split() for line in described.splitlines()]
            assert "Failed to get lease" not in described
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await follow.stop()


@pytest.mark.usefixtures("bridge")
async def test_the_bridge_goes_on_after_a_kubelet_restart_cuts_an_allocate(
    kubelet: Kubelet, plugin: FakePlugin, core: client.CoreV1Api, nodes: Follow, pods: Follow
) -> None:
    """Soak regression: the restart cancelled the Allocate in flight and the bridge ended
    with it, so the node's pods were no longer followed: deleted ones stayed in PodResources.
    Now the cut pod fails admission and the node goes on admitting and freeing."""
    await nodes.until(node_has(lambda n: n["status"]["allocatable"].get(RESOURCE) == "1"))
    plugin.allocate_hangs = True
    await create_pod(core, "cut")
    async with asyncio.timeout(WAIT_S):
        await plugin.changes.wait_for(lambda: bool(plugin.allocate_requests))
    await kubelet.restart()
    await pods.until(phase_of("cut", "Failed"))
    assert (
        pods.reflector.objects[("default", "cut")]["status"]["reason"] == "UnexpectedAdmissionError"
    )

    plugin.allocate_hangs = False
    await plugin.stop()
    await plugin.start(kubelet.socket)
    await nodes.until(node_has(lambda n: n["status"]["allocatable"].get(RESOURCE) == "1"))
    await create_pod(core, "next")
    await pods.until(phase_of("next", "Running"))
    uid = pods.reflector.objects[("default", "next")]["metadata"]["uid"]
    await core.delete_namespaced_pod("next", "default")
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: uid not in kubelet.pods)


@pytest.mark.usefixtures("plugin", "bridge")
async def test_nodes_show_their_kubelet_version(nodes: Follow) -> None:
    """Issue 27: `kubectl get nodes` showed no VERSION (status.nodeInfo.kubeletVersion)."""
    await nodes.until(node_has(lambda n: bool((n.get("status") or {}).get("nodeInfo"))))
    info = nodes.reflector.objects[("", NODE)]["status"]["nodeInfo"]
    assert info["kubeletVersion"].startswith("v1.")
    assert info["operatingSystem"] == "linux"


async def test_a_pod_without_a_free_pod_address_waits_with_an_event_not_a_traceback(
    kubelet: Kubelet,
    api: client.ApiClient,
    core: client.CoreV1Api,
    pods: Follow,
    socket_dir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Issue 27: pods beyond a node's pod CIDR stayed Pending without a word, and the log had a
    traceback each. A kubelet whose CNI cannot give a pod an address reports it in a
    FailedCreatePodSandBox Event; the pod stays Pending, its containers ContainerCreating."""
    network = NodeNetwork(0)
    while True:  # every pod address taken
        try:
            network.allocate()
        except NoPodAddress:
            break
    settings = RuntimeSettings(
        sim_image="akri-sim", bin_dir=socket_dir, api_host="127.0.0.1", api_port=1,
        ca_file=socket_dir / "ca", token=lambda pod: "",
    )  # fmt: skip
    host = NodeHost(
        NODE, lambda path: socket_dir / path.lstrip("/"), socket_dir / "pods", network=network
    )
    processes = Processes(settings, host, fetch=_nothing)
    task = asyncio.create_task(NodeBridge(kubelet, api, processes=processes).run())
    try:
        await create_pod(core, "late", count=0)

        def creating(objects: dict[Key, Object]) -> bool:
            pod = objects.get(("default", "late")) or {}
            statuses = (pod.get("status") or {}).get("containerStatuses") or []
            return any("ContainerCreating" in json.dumps(s.get("state")) for s in statuses)

        await pods.until(creating)
        assert pods.reflector.objects[("default", "late")]["status"]["phase"] == "Pending"
        events = await core.list_namespaced_event("default")
        (event,) = [e for e in events.items if e.involved_object.name == "late"]
        assert (event.type, event.reason) == ("Warning", "FailedCreatePodSandBox")
        assert f"no free pod address in {network.cidr}" in event.message
        assert not [r for r in caplog.records if r.exc_info]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _nothing(kind: str, namespace: str, name: str) -> dict[str, Any] | None:
    return None
