"""Agent fixtures: simulated nodes (kubelet emulator + the agent's plugin layer) on one API server.

Each `AgentNode` is what one agent runs on one node: its own Instance cache, plugin manager and
(optionally) slot reclaimer, talking to its own kubelet emulator over real sockets, with a
stand-in for discovery that reports each Instance listing the node as a device it sees. Every node
shares the API server, so nodes race for slots as separate agents would.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.agent.changes import Changes
from akri.agent.devices import DeviceStore
from akri.agent.instances import InstanceCache
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins import Allocations, PluginManager, Reclaimer
from akri.api import (
    Configuration,
    ConfigurationSpec,
    DiscoveryHandlerInfo,
    Instance,
    InstanceSpec,
    ObjectMeta,
)
from akri.backoff import Backoff
from akri.discovery.model import Device
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    AllocateResponse,
    ContainerAllocateRequest,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.kubelet import AdmittedPod, Container, Kubelet
from akri.slots import Holding

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

NAMESPACE = "default"
DEADLINE_S = 30.0  # generous: only a hang should reach it, on a loaded machine too
"""How long a test waits for something that should happen; generous, never a pass/fail timer."""
WATCH_INTERVAL_S = 0.02
"""Tests look for kubelet restarts more often than the agent's 200 ms, to stay fast."""


def configuration(
    name: str, *, capacity: int = 2, unique: bool = True, properties: Mapping[str, str] = {}
) -> Configuration:
    return Configuration(
        metadata=ObjectMeta(name=name, namespace=NAMESPACE),
        spec=ConfigurationSpec(
            discovery_handler=DiscoveryHandlerInfo(name="debugEcho"),
            capacity=capacity,
            unique_devices=unique,
            broker_properties=dict(properties),
        ),
    )


def shared_instance(
    config: Configuration,
    device: str,
    nodes: Sequence[str],
    *,
    capacity: int | None = None,
    properties: Mapping[str, str] = {},
) -> Instance:
    """A shared Instance of `config` for `device`, all slots free."""
    name = naming.instance_name(config.metadata.name or "", device)
    capacity = config.spec.capacity if capacity is None else capacity
    return Instance(
        metadata=ObjectMeta(name=name, namespace=NAMESPACE),
        spec=InstanceSpec(
            configuration_name=config.metadata.name or "",
            capacity=capacity,
            shared=True,
            nodes=list(nodes),
            broker_properties={**properties, **config.spec.broker_properties},
            device_usage=dict.fromkeys(naming.slot_ids(name, capacity), ""),
        ),
    )


class Cluster:
    """The API server's Instances and the Configurations the agents know (a dict as lookup)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.configurations: dict[tuple[str, str], Configuration] = {}
        self.configuration_changes = Changes()
        self.nodes: list[AgentNode] = []

    def lookup(self, namespace: str, name: str) -> Configuration | None:
        return self.configurations.get((namespace, name))

    def set_configuration(self, config: Configuration) -> None:
        """Add or change a Configuration, telling every node's manager as the watcher would."""
        self.configurations[(NAMESPACE, config.metadata.name or "")] = config
        self.configuration_changes.changed()

    def delete_configuration(self, name: str) -> None:
        del self.configurations[(NAMESPACE, name)]
        self.configuration_changes.changed()

    async def create_instance(
        self,
        config: Configuration,
        device: str,
        nodes: Sequence[str],
        *,
        capacity: int | None = None,
        properties: Mapping[str, str] = {},
    ) -> str:
        """A shared Instance of `config` for `device`, all slots free; returns its name."""
        instance = shared_instance(config, device, nodes, capacity=capacity, properties=properties)
        await self.custom.create_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", instance.to_wire()
        )
        return instance.metadata.name or ""

    async def read(self, name: str) -> Instance:
        """The Instance as the API server stores it now."""
        stored = await self.custom.get_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", name
        )
        return Instance.from_wire(stored)

    async def usage(self, name: str) -> dict[str, str]:
        return (await self.read(name)).spec.device_usage

    async def change_instance(self, name: str, **spec: Any) -> None:
        """Set spec fields (snake_case) of an Instance, as discovery or the controller would."""
        stored = await self.read(name)
        changed = stored.model_copy(update={"spec": stored.spec.model_copy(update=spec)})
        await self.custom.replace_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", name, changed.to_wire()
        )

    async def delete_instance(self, name: str) -> None:
        await self.custom.delete_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", name
        )


def fast_backoff() -> Backoff:
    return Backoff(initial=0.01, maximum=0.1)


@dataclass(frozen=True)
class AgentOptions:
    reclaim: bool = False
    """Run a reclaimer with a fast interval and `grace`."""
    grace: float = 0.2
    interval: float = 0.05
    """How often the reclaimer runs a round without being called."""
    allocate_timeout: float = 5.0
    clock: Callable[[], float] = time.monotonic
    register_backoff: Callable[[], Backoff] = fast_backoff


async def discover_instances(cache: InstanceCache, node: str, devices: DeviceStore) -> None:
    """Discovery's stand-in: every Instance that lists `node` is a device it reports, with no
    mounts or device nodes."""
    with cache.subscribe() as changes:
        while True:
            mine = [i.metadata.name or "" for i in cache.all() if node in i.spec.nodes]
            devices.report(discover_instances, {name: Device(name) for name in mine})
            await changes.next()


@dataclass
class Agent:
    """The plugin layer of one agent process: what dies with it and comes back on restart."""

    cache: InstanceCache
    devices: DeviceStore
    allocations: Allocations
    manager: PluginManager
    reclaimer: Reclaimer | None
    tasks: list[asyncio.Task[None]]
    metrics: AgentMetrics

    @classmethod
    def start(cls, cluster: Cluster, kubelet: Kubelet, options: AgentOptions) -> Agent:
        node = kubelet.node_name
        cache = InstanceCache(cluster.api)
        devices = DeviceStore()
        allocations = Allocations(options.clock)
        metrics = AgentMetrics()
        manager = PluginManager(
            cache,
            cluster.lookup,
            node,
            configuration_changes=cluster.configuration_changes,
            devices=devices,
            allocations=allocations,
            metrics=metrics,
            device_plugins_dir=kubelet.device_plugins_dir,
            allocate_timeout=options.allocate_timeout,
            watch_interval=WATCH_INTERVAL_S,
            register_backoff=options.register_backoff,
        )
        reclaimer = None
        if options.reclaim:
            reclaimer = Reclaimer(
                cache,
                node,
                kubelet.pod_resources_socket,
                allocations=allocations,
                metrics=metrics,
                interval=options.interval,
                grace=options.grace,
                clock=options.clock,
            )
        runs = [
            cache.run(),
            discover_instances(cache, node, devices),
            manager.run(),
            *([reclaimer.run()] if reclaimer else []),
        ]
        tasks = [asyncio.create_task(run, name=f"agent of {node}") for run in runs]
        return cls(cache, devices, allocations, manager, reclaimer, tasks, metrics)

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        results = await asyncio.gather(*self.tasks, return_exceptions=True)
        # A cancelled task keeps its CancelledError, whose traceback keeps the frames (and a
        # grpc.aio channel in their locals) alive: forget the tasks so the leak check sees them go.
        self.tasks.clear()
        failures = [r for r in results if not isinstance(r, asyncio.CancelledError | None)]
        assert not failures, f"agent tasks failed: {failures}"


@dataclass
class AgentNode:
    name: str
    kubelet: Kubelet
    cluster: Cluster
    options: AgentOptions
    agent: Agent
    pods: int = field(default=0)

    @property
    def cache(self) -> InstanceCache:
        return self.agent.cache

    @property
    def manager(self) -> PluginManager:
        return self.agent.manager

    @property
    def allocations(self) -> Allocations:
        return self.agent.allocations

    @property
    def metrics(self) -> AgentMetrics:
        return self.agent.metrics

    async def restart_agent(self) -> None:
        """The agent process stops and a new one starts, with nothing but the API and kubelet."""
        await self.agent.stop()
        self.agent = Agent.start(self.cluster, self.kubelet, self.options)

    async def until(self, condition: Callable[[], bool], what: str) -> None:
        """Wait until `condition` holds on this node's kubelet."""
        try:
            async with asyncio.timeout(DEADLINE_S):
                await self.kubelet.wait_for(condition)
        except TimeoutError:
            pytest.fail(f"{self.name}: timed out waiting for {what}")

    async def until_registered(self, *resources: str) -> None:
        await self.until(
            lambda: set(resources) <= self.kubelet.registered_resources(), f"{resources} registered"
        )

    async def until_capacity(self, resource: str, capacity: int, allocatable: int) -> None:
        def reached() -> bool:
            status = self.kubelet.resources().get(resource)
            return (
                status is not None
                and status.registered
                and (status.capacity, status.allocatable) == (capacity, allocatable)
            )

        await self.until(reached, f"{resource} capacity {capacity} allocatable {allocatable}")

    async def admit(self, *containers: Container, init: Sequence[Container] = ()) -> AdmittedPod:
        """Admit a new pod with these containers (raises AdmissionError when refused); the Pod
        exists in the API, Running on this node, as a pod the kubelet lists does."""
        self.pods += 1
        uid = f"{self.name}-pod-{self.pods}"
        admitted = await self.kubelet.admit(
            uid, uid, NAMESPACE, init_containers=init, containers=containers
        )
        core = client.CoreV1Api(self.cluster.api)
        pod = client.V1Pod(
            metadata=client.V1ObjectMeta(name=uid),
            spec=client.V1PodSpec(
                node_name=self.name,
                containers=[client.V1Container(name=c.name, image="app") for c in containers],
            ),
        )
        await core.create_namespaced_pod(NAMESPACE, pod)
        await core.patch_namespaced_pod_status(uid, NAMESPACE, {"status": {"phase": "Running"}})
        return admitted

    async def end(self, pod: AdmittedPod) -> None:
        """The pod ends: its containers are gone from the kubelet, the Pod from the API."""
        assert self.kubelet.remove_pod(pod.spec.uid)
        await client.CoreV1Api(self.cluster.api).delete_namespaced_pod(
            pod.spec.uid, NAMESPACE, grace_period_seconds=0
        )

    def admitted(self) -> set[Holding]:
        """Every device the kubelet gave to a container of an admitted pod."""
        return {
            Holding(resource, device)
            for pod in self.kubelet.pods.values()
            for held in pod.allocations.values()
            for resource, assignment in held.items()
            for device in assignment.ids
        }

    def ids(self, resource: str) -> set[str]:
        """Device ids of `resource` held by containers of admitted pods."""
        return {
            device
            for pod in self.kubelet.pods.values()
            for held in pod.allocations.values()
            if resource in held
            for device in held[resource].ids
        }


StartNode = Callable[..., Awaitable[AgentNode]]


class Clock:
    """A monotonic clock the test moves by hand, so "after the grace period" is exact."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def allocate(node: AgentNode, resource: str, *containers: Sequence[str]) -> AllocateResponse:
    """Call a plugin's Allocate directly, as a kubelet would."""
    server = node.manager.plugins[resource].server
    assert server is not None
    request = AllocateRequest(
        container_requests=[ContainerAllocateRequest(devices_ids=ids) for ids in containers]
    )
    async with grpc.aio.insecure_channel(f"unix://{server.socket}") as channel:
        stub: DevicePluginAsyncStub = DevicePluginStub(channel)
        return await stub.Allocate(request, timeout=DEADLINE_S)


async def allocate_error(
    node: AgentNode, resource: str, *containers: Sequence[str]
) -> tuple[grpc.StatusCode, str]:
    """The error code and message of an Allocate that must fail."""
    try:
        await allocate(node, resource, *containers)
    except grpc.aio.AioRpcError as error:
        return error.code(), error.details() or ""
    pytest.fail(f"Allocate of {containers} on {node.name} succeeded")


@pytest.fixture
def cluster(api: client.ApiClient) -> Cluster:
    return Cluster(api)


@pytest.fixture
async def start_node(cluster: Cluster, socket_dir: Path) -> AsyncIterator[StartNode]:
    """Start simulated nodes: a kubelet (unless `kubelet=False`) and an agent's plugin layer."""
    async with contextlib.AsyncExitStack() as stack:

        async def start(name: str, *, kubelet: bool = True, **options: Any) -> AgentNode:
            root = socket_dir / name
            emulator = Kubelet(name, root / "dp", root / "pr", call_timeout=DEADLINE_S)
            stack.push_async_callback(emulator.stop)
            if kubelet:
                await emulator.start()
            agent_options = AgentOptions(**options)
            agent = Agent.start(cluster, emulator, agent_options)
            node = AgentNode(name, emulator, cluster, agent_options, agent)
            stack.push_async_callback(lambda: node.agent.stop())  # the agent of the moment
            cluster.nodes.append(node)
            return node

        yield start
