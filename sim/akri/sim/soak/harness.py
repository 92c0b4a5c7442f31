"""The soak's cluster: the API emulator, a kubelet emulator per node and the scheduler in this
process; every agent and two controller replicas as programs of their own, so a kill -9 is a
real kill. It does what the plan says and reads the state the checker judges.

The checker's reads go to the API server's store in this process, not over HTTP: the faults
injected on the API's HTTP side must hold up the components, not the judge. PodResources is
read from every kubelet over its gRPC socket; while a kubelet is down, its containers run on
and the last list read stands for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import grpc
from kubernetes_asyncio import client

from akri import naming
from akri.api import crd_definitions
from akri.dra.mode import Mode
from akri.proto.podresources.v1.api_pb2 import ListPodResourcesRequest
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerStub
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.sim.cluster import load_client
from akri.sim.kubelet import Kubelet
from akri.sim.kubelet.node import NodeBridge
from akri.sim.scheduler import Scheduler
from akri.sim.soak.checker import InstanceView, Snapshot, Use, claim_uses
from akri.sim.soak.plan import Layout
from akri.sim.soak.user import NAMESPACE, User

log = logging.getLogger(__name__)

LEASE = "akri-controller"
CONTROLLERS = 2
RESTART_DELAY_S = 1.0
"""How long a DaemonSet or Deployment takes to start a replacement for an exited program."""
LIST_TIMEOUT_S = 2.0
AGENT_START_S = 60.0
"""An agent not ready this long after it started counts as up anyway: a start-up that never
ends must still show as the bounded rules' violations."""


def free_port() -> int:
    """A TCP port free on this machine now, for an agent's /readyz."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(frozen=True)
class Timing:
    """The components' grace periods, short so that a soak sees many of them expire."""

    offline_grace: float = 4.0
    reclaim_grace: float = 5.0
    reclaim_interval: float = 1.0
    node_grace: float = 10.0
    lease_duration: float = 4.0
    lease_renew_interval: float = 1.0
    lease_renew_deadline: float = 2.5
    lease_retry_interval: float = 0.5


@dataclass
class Program:
    """One program in its own process, restarted by `start` after it exits or is killed."""

    name: str
    argv: list[str]
    env: dict[str, str]
    log_path: Path
    on_exit: Callable[[Program, int], None]
    process: asyncio.subprocess.Process | None = None
    expected_exit: bool = False
    started_at: float = 0.0
    _watch: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def start(self) -> None:
        """Start the program unless it runs: a DaemonSet or Deployment never runs a second
        replica of it (two restarts meeting on a loaded machine once left an agent running
        beside its replacement, outliving the soak)."""
        if self.running:
            return
        self.expected_exit = False
        with self.log_path.open("ab") as output:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, env=self.env, stdout=output, stderr=output
            )
        self.started_at = time.monotonic()
        self._watch = asyncio.create_task(self._wait(self.process), name=f"watch-{self.name}")

    async def _wait(self, process: asyncio.subprocess.Process) -> None:
        code = await process.wait()
        if not self.expected_exit and process is self.process:
            self.on_exit(self, code)

    async def kill(self, signum: int = signal.SIGKILL) -> None:
        """kill -9 by default; waits until the process is gone."""
        self.expected_exit = True
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signum)
            await self.process.wait()

    async def stop(self) -> None:
        self.expected_exit = True
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(10):
                    await self.process.wait()
            except TimeoutError:
                await self.kill()
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch

    def log_tail(self, lines: int = 20) -> list[str]:
        return self.log_path.read_text(errors="replace").splitlines()[-lines:]


@dataclass
class Node:
    name: str
    kubelet: Kubelet
    agent: Program
    availability: Path
    offline: set[str] = field(default_factory=set)
    lost: bool = False
    uses: list[Use] = field(default_factory=list)
    """The last PodResources read from the kubelet."""
    answering: bool = True
    """Whether the kubelet answered the last PodResources read: an agent changes no slot
    while its kubelet does not answer, so the node is not healthy meanwhile."""
    readyz: str = ""
    """The agent's /readyz: a started agent counts as up once it answers 200 (its caches
    synced), not while its process is still starting (at load 15, 20-30 s)."""
    ready: asyncio.subprocess.Process | None = None
    """The agent process last seen ready."""

    @property
    def agent_up(self) -> bool:
        agent = self.agent
        if not agent.running:
            return False
        return self.ready is agent.process or time.monotonic() - agent.started_at > AGENT_START_S


async def read_readiness(node: Node) -> None:
    """Ask a started agent's /readyz until it answers 200 (then `node.agent_up` holds)."""
    process = node.agent.process
    if process is None or process is node.ready or not node.agent.running:
        return
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=LIST_TIMEOUT_S)) as http,
            http.get(node.readyz) as response,
        ):
            if response.status == 200:
                node.ready = process
    except (aiohttp.ClientError, TimeoutError):
        return  # not serving yet


class Harness:
    """`async with Harness(layout, workdir, timing) as harness:`"""

    def __init__(
        self, layout: Layout, workdir: Path, timing: Timing, log_level: str = "WARNING"
    ) -> None:
        """`log_level`: the programs' (their logs stay in `<workdir>/logs` after a violation)."""
        self.layout = layout
        self.log_level = log_level
        self.workdir = workdir
        self.timing = timing
        self.server = ApiServer()
        self.crashes: list[str] = []
        self.lease_losses = 0
        self.pod_created: dict[str, float] = {}
        self.pod_started: dict[str, float] = {}
        self.nodes: dict[str, Node] = {}
        self.controllers: list[Program] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._api: client.ApiClient | None = None
        self._user: User | None = None
        self._restarts: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.api_faulted = False
        self.started = time.monotonic()
        """Snapshot times count from here."""

    # ---- life cycle -------------------------------------------------------------------------

    async def __aenter__(self) -> Harness:
        await self.server.start()
        kubeconfig = self.server.write_kubeconfig(self.workdir / "kubeconfig")
        await self.server.apply_definitions(crd_definitions())
        self.server.operations.store.listeners.append(self._store_changed)
        self._api = await load_client(kubeconfig)
        self._user = User(self._api)
        (self.workdir / "logs").mkdir(exist_ok=True)
        for name in self.layout.nodes:
            node = self._node(name, kubeconfig)
            self.nodes[name] = node
            await node.kubelet.start()
            self._spawn(NodeBridge(node.kubelet, self._api).run(), f"bridge-{name}")
            await node.agent.start()
        self._spawn(Scheduler(self._api).run(), "scheduler")
        for index in range(CONTROLLERS):
            controller = self._program(
                f"controller-{index}",
                "akri.controller.main",
                self._controller_env(kubeconfig, index),
            )
            self.controllers.append(controller)
            await controller.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        self._stopping = True
        self.server.faults.clear()
        for task in self._restarts:
            task.cancel()
        programs = [node.agent for node in self.nodes.values()] + self.controllers
        await asyncio.gather(*(program.stop() for program in programs))
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for node in self.nodes.values():
            await node.kubelet.stop()
        if self._api is not None:
            await self._api.close()
        await self.server.stop()

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run an in-process component until the harness stops it; one that ends before, in
        any way (a CancelledError it did not ask for included), is a crash."""

        def report(task: asyncio.Task[None]) -> None:
            if self._stopping:
                return
            if task.cancelled():
                self.crashes.append(f"{name} (ended by a CancelledError)")
            elif task.exception() is not None:
                self.crashes.append(f"{name} ({task.exception()!r})")
            else:
                self.crashes.append(f"{name} (returned)")

        task = asyncio.create_task(work, name=name)
        task.add_done_callback(report)
        self._tasks.append(task)

    def _program(self, name: str, module: str, env: dict[str, str]) -> Program:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "KUBECONFIG"))}
        return Program(
            name,
            [sys.executable, "-m", module],
            {
                **base,
                "GRPC_VERBOSITY": "ERROR",
                "LOG_LEVEL": self.log_level,
                "METRICS_PORT": "0",
                **env,
            },
            self.workdir / "logs" / f"{name}.log",
            self._exited,
        )

    def _node(self, name: str, kubeconfig: Path) -> Node:
        root = self.workdir / name
        plugins, pod_resources, handlers = root / "dp", root / "pr", root / "dh"
        for directory in (plugins, pod_resources, handlers):
            directory.mkdir(parents=True, exist_ok=True)
        availability = root / "availability"
        availability.write_text("")
        timing = self.timing
        env = {
            "AGENT_NODE_NAME": name,
            "KUBECONFIG": str(kubeconfig),
            "DEVICE_PLUGINS_DIR": str(plugins),
            "POD_RESOURCES_SOCKET": str(pod_resources / "kubelet.sock"),
            "DISCOVERY_HANDLERS_DIRECTORY": str(handlers),
            "ENABLE_DEBUG_ECHO": "",
            "DEBUG_ECHO_INSTANCES_SHARED": str(name not in self.layout.local_nodes).lower(),
            "DEBUG_ECHO_AVAILABILITY_FILE": str(availability),
            "OFFLINE_GRACE": str(timing.offline_grace),
            "RECLAIM_GRACE": str(timing.reclaim_grace),
            "RECLAIM_INTERVAL": str(timing.reclaim_interval),
            "METRICS_PORT": str(port := free_port()),
        }
        kubelet_dir = root / "kubelet"
        dra = {
            "PLUGINS_REGISTRY_DIR": kubelet_dir / "plugins_registry",
            "KUBELET_PLUGINS_DIR": kubelet_dir / "plugins",
            "CDI_DIR": kubelet_dir / "cdi",
        }
        if self.layout.dra:
            for directory in dra.values():
                directory.mkdir(parents=True, exist_ok=True)
            env |= {"AKRI_MODE": Mode.DRA, **{k: str(v) for k, v in dra.items()}}
        kubelet = Kubelet(
            name,
            plugins,
            pod_resources,
            plugins_registry_dir=dra["PLUGINS_REGISTRY_DIR"] if self.layout.dra else None,
            cdi_dir=dra["CDI_DIR"] if self.layout.dra else None,
        )
        agent = self._program(f"agent-{name}", "akri.agent.main", env)
        return Node(name, kubelet, agent, availability, readyz=f"http://127.0.0.1:{port}/readyz")

    def _controller_env(self, kubeconfig: Path, index: int) -> dict[str, str]:
        timing = self.timing
        return {
            "KUBECONFIG": str(kubeconfig),
            "POD_NAME": f"controller-{index}",
            "POD_NAMESPACE": NAMESPACE,
            "NODE_GRACE": str(timing.node_grace),
            "LEASE_NAME": LEASE,
            "LEASE_DURATION": str(timing.lease_duration),
            "LEASE_RENEW_INTERVAL": str(timing.lease_renew_interval),
            "LEASE_RENEW_DEADLINE": str(timing.lease_renew_deadline),
            "LEASE_RETRY_INTERVAL": str(timing.lease_retry_interval),
            "AKRI_MODE": Mode.DRA if self.layout.dra else Mode.DEVICE_PLUGIN,
        }

    def _exited(self, program: Program, code: int) -> None:
        """A program ended without our kill: a crash, unless it is a controller that lost its
        lease (it exits so that a fresh replica campaigns). Restarted as Kubernetes would."""
        tail = program.log_tail()
        if (
            program in self.controllers
            and code == 1
            and any("leadership lost" in line for line in tail)
        ):
            self.lease_losses += 1
        else:
            self.crashes.append(f"{program.name} exited {code}: {' | '.join(tail[-3:])}")
        task = asyncio.create_task(self._restart(program), name=f"restart-{program.name}")
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)

    async def _restart(self, program: Program) -> None:
        await asyncio.sleep(RESTART_DELAY_S)
        node = next((n for n in self.nodes.values() if n.agent is program), None)
        if node is None or not node.lost:
            await program.start()

    # ---- what the plan does -----------------------------------------------------------------

    @property
    def api(self) -> client.ApiClient:
        if self._api is None:
            raise RuntimeError("the harness is not running")
        return self._api

    @property
    def user(self) -> User:
        if self._user is None:
            raise RuntimeError("the harness is not running")
        return self._user

    def set_offline(self, node: str, description: str, offline: bool) -> None:
        target = self.nodes[node]
        (target.offline.add if offline else target.offline.discard)(description)
        target.availability.write_text("".join(f"{d}\n" for d in sorted(target.offline)))

    async def kill_leader(self) -> str | None:
        lease = self.server.operations.store.peek(
            ("coordination.k8s.io", "leases"), NAMESPACE, LEASE
        )
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
        for controller in self.controllers:
            if holder.startswith(f"{controller.name}-") and controller.running:
                await controller.kill()
                self._restart_later(controller)
                return controller.name
        return None

    def _restart_later(self, program: Program) -> None:
        task = asyncio.create_task(self._restart(program), name=f"restart-{program.name}")
        self._restarts.add(task)
        task.add_done_callback(self._restarts.discard)

    def api_fault(self, **rule: Any) -> FaultRule:
        self.api_faulted = True
        return self.server.faults.add(FaultRule(**rule))

    def end_api_faults(self) -> None:
        self.server.faults.clear()
        self.api_faulted = False

    def pause_api(self) -> None:
        self.api_faulted = True
        self.server.faults.pause()

    async def evict(self, node: str) -> None:
        """What Kubernetes does to the pods of a node lost past their toleration: delete them."""
        store = self.server.operations.store
        for pod in store.objects(("", "pods"), NAMESPACE):
            if pod["spec"].get("nodeName") == node:
                await self.user.delete_pod(pod["metadata"]["name"])

    def _store_changed(self, key: tuple[str, str], event: Any) -> None:
        if key != ("", "pods"):
            return
        metadata = event.obj["metadata"]
        name = metadata["name"]
        phase = (event.obj.get("status") or {}).get("phase")
        if phase == "Running" and name in self.pod_created and name not in self.pod_started:
            self.pod_started[name] = time.monotonic()

    # ---- what the checker reads -------------------------------------------------------------

    async def snapshot(self) -> Snapshot:
        await asyncio.gather(
            *(self._read_pod_resources(node) for node in self.nodes.values()),
            *(read_readiness(node) for node in self.nodes.values()),
        )
        store = self.server.operations.store
        now = time.monotonic() - self.started
        instances = {}
        for obj in store.objects((naming.GROUP, "instances")):
            spec = obj.get("spec") or {}
            name = obj["metadata"]["name"]
            instances[name] = InstanceView(
                name,
                spec.get("configurationName", ""),
                int(spec.get("capacity", 0)),
                frozenset(spec.get("nodes") or ()),
                {k: v for k, v in (spec.get("deviceUsage") or {}).items() if v},
            )
        pods = {
            f"{p['metadata']['namespace']}/{p['metadata']['name']}": (p.get("status") or {}).get(
                "phase", ""
            )
            for p in store.objects(("", "pods"))
        }
        configurations = {
            c["metadata"]["name"] for c in store.objects((naming.GROUP, "configurations"))
        }
        visible = {
            (node.name, self.layout.instance(device, node.name))
            for node in self.nodes.values()
            if not node.lost
            for device in self.layout.devices
            if device.description not in node.offline and device.configuration in configurations
        }
        healthy = (
            set()
            if self.api_faulted
            else {
                node.name
                for node in self.nodes.values()
                if not node.lost and node.agent_up and node.kubelet.running and node.answering
            }
        )
        uses = [use for node in self.nodes.values() for use in node.uses]
        if self.layout.dra:
            pod_nodes = {
                f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["spec"].get("nodeName")
                for p in store.objects(("", "pods"))
                if p["spec"].get("nodeName")
            }
            claims = store.objects(("resource.k8s.io", "resourceclaims"))
            uses += claim_uses(claims, pod_nodes, instances.keys())
        return Snapshot(
            now, instances, pods, uses, visible, healthy, list(self.crashes), self.layout.dra
        )

    async def _read_pod_resources(self, node: Node) -> None:
        if not node.kubelet.running:
            return  # its containers run on: the last list stands
        try:
            async with grpc.aio.insecure_channel(
                f"unix://{node.kubelet.pod_resources_socket}"
            ) as channel:
                response = await PodResourcesListerStub(channel).List(
                    ListPodResourcesRequest(), timeout=LIST_TIMEOUT_S
                )
        except grpc.aio.AioRpcError as error:
            log.debug("PodResources of %s not read: %s", node.name, error.code())
            node.answering = False
            return
        node.answering = True
        node.uses = [
            Use(
                node.name,
                f"{pod.namespace}/{pod.name}",
                container.name,
                device.resource_name,
                device_id,
            )
            for pod in response.pod_resources
            for container in pod.containers
            for device in container.devices
            if device.resource_name.startswith(naming.RESOURCE_PREFIX)
            for device_id in device.device_ids
        ]
