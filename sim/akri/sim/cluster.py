"""A whole cluster in one process: API server, simulated nodes, scheduler, and optionally a real
akri agent per node and the real akri controller.

This is what `akri sim` runs for a user without Kubernetes and what the integration tests run
on. Every component talks to the others only as it would in a real cluster: through the
Kubernetes API over HTTP (kubernetes-asyncio) and through gRPC on unix sockets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.agent.agent import Agent
from akri.agent.settings import AgentSettings
from akri.api import crd_definitions
from akri.controller.context import Tuning
from akri.controller.controller import Controller, resolved
from akri.controller.metrics import ControllerMetrics
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.dra.mode import Mode
from akri.kube.calls import call
from akri.kube.connect import api_client
from akri.naming import object_name_problem
from akri.service import Service
from akri.sim.apiserver import ApiServer, errors
from akri.sim.apiserver.kubernetes_service import SERVICE_IP, SERVICE_PORT
from akri.sim.apiserver.tls import Pki
from akri.sim.host_paths import local_path, node_host_dirs
from akri.sim.kubelet import Kubelet
from akri.sim.kubelet.node import NodeBridge
from akri.sim.kubelet.runtime.pod import NodeHost, RuntimeSettings
from akri.sim.kubelet.runtime.processes import Processes
from akri.sim.kubelet.runtime.spec import DEFAULT_SIM_IMAGE, SIM_IMAGE_ENV
from akri.sim.podnet.cluster import ClusterNetwork
from akri.sim.scheduler import Scheduler
from akri.sim.workloads.controllers import DisruptionController, WorkloadControllers

log = logging.getLogger(__name__)


TOKEN_LIFETIME_S = 86400


@dataclass(frozen=True)
class RuntimeOptions:
    """How simulated kubelets run containers of the project's image as processes."""

    image: str = field(default_factory=lambda: os.environ.get(SIM_IMAGE_ENV, DEFAULT_SIM_IMAGE))
    token: Callable[[Mapping[str, Any]], str] | None = None
    """pod -> the token it gets; default: one the API server issues for its ServiceAccount,
    bound to the pod (as the kubelet's projected token volume gets it)."""
    backoff_initial_s: float = 10.0
    backoff_max_s: float = 300.0


def _pod_log(
    bridges: Mapping[str, NodeBridge], pod: dict[str, Any], container: str, previous: bool
) -> str:
    bridge = bridges.get((pod.get("spec") or {}).get("nodeName") or "")
    if bridge is None:
        return ""
    try:
        return bridge.log_text(pod["metadata"]["uid"], container, previous)
    except LookupError as error:
        raise errors.bad_request(str(error)) from error


async def _pod_exec(
    bridges: Mapping[str, NodeBridge],
    pod: dict[str, Any],
    container: str,
    command: Sequence[str],
    stdin: bool,
) -> asyncio.subprocess.Process:
    bridge = bridges.get((pod.get("spec") or {}).get("nodeName") or "")
    try:
        if bridge is None:
            raise LookupError("the pod is not on a node")
        return await bridge.exec(pod["metadata"]["uid"], container, command, stdin)
    except LookupError as error:
        raise errors.bad_request(str(error)) from error


def _temp_root() -> str:
    """TMPDIR when short, else /tmp: grpc binds unix socket paths of up to 105 bytes, and a
    node's sockets lie four levels under the work directory."""
    root = tempfile.gettempdir()
    return root if len(root) <= MAX_TEMP_ROOT else "/tmp"


MAX_TEMP_ROOT = 32


def node_names(spec: str) -> list[str]:
    """`--nodes 2` means node-0 and node-1; `--nodes a,b` names them. ValueError says what is
    wrong with `spec`: no nodes, a name twice, or a name a Node cannot have."""
    if spec.isdigit():
        if int(spec) < 1:
            raise ValueError(f"--nodes wants at least one node, got {spec!r}")
        return [f"node-{i}" for i in range(int(spec))]
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--nodes wants a count or distinct comma-separated names, got {spec!r}")
    for name in names:
        if problem := object_name_problem(name, "a Node"):
            raise ValueError(f"--nodes: {problem}")
    return names


@dataclass
class SimNode:
    """One simulated node: its kubelet emulator, and the host paths its agent uses."""

    name: str
    kubelet: Kubelet
    device_plugins_dir: Path
    pod_resources_dir: Path
    discovery_handlers_dir: Path
    kubelet_dir: Path
    """The node's /var/lib/kubelet: plugins_registry/ and plugins/ of DRA plugins live here."""
    debug_echo: DebugEcho
    debug_echo_file: Path
    """Write OFFLINE or device descriptions here to take the node's debugEcho devices offline."""
    agent: Agent | None = None

    @property
    def root(self) -> Path:
        return self.device_plugins_dir.parent

    def host_path(self, path: str) -> Path:
        """Where a path of this node's host filesystem (a hostPath volume) lives here: the
        kubelet's and akri's directories are the node's own, anything else is under `host/`."""
        return local_path(node_host_dirs(self.root), path) or self.root / "host" / path.lstrip("/")


async def load_client(kubeconfig: Path) -> client.ApiClient:
    """A kubernetes-asyncio client loaded from a kubeconfig, the way a user's program loads one."""
    return await api_client(kubeconfig)


class Cluster(Service):
    """Start with `async with Cluster(["node-0", "node-1"]) as cluster:`."""

    def __init__(
        self,
        nodes: Sequence[str],
        *,
        workdir: Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        kubeconfig: Path | None = None,
        agents: bool = False,
        controller: Tuning | None = None,
        agent_options: Mapping[str, Any] | None = None,
        mode: Mode = Mode.DEVICE_PLUGIN,
        dra_api: bool = True,
        processes: RuntimeOptions | None = None,
        authorization: bool = False,
        network: ClusterNetwork | None = None,
    ) -> None:
        """`agents` runs an akri agent on every node (with an embedded debugEcho whose
        availability file is `<workdir>/nodes/<node>/debug-echo-availability`); `controller`
        runs the akri controller with that tuning. `agent_options` are AgentSettings fields
        (e.g. offline_grace) for every agent. `mode` is the agents' and the controller's
        allocation mode; `dra_api` whether the API server serves resource.k8s.io/v1. With
        `processes`, containers of the project's image run as local processes (root and
        `unshare` needed), reaching the API server in-cluster over TLS. `authorization`: whether
        the API server authorizes requests by RBAC (the admin kubeconfig and the in-process
        components may do anything either way). `network`: the pod network this process has
        entered (akri.sim.podnet.cluster.enter), for `processes`: pods that are not hostNetwork
        get their own network namespace and address, and reach the API server at the
        `kubernetes` Service's address; without it every pod shares this machine's network."""
        self._owned_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="akri-sim-", dir=_temp_root()))
        self.kubeconfig = kubeconfig or self.workdir / "kubeconfig"
        self._processes = processes
        pki = Pki(self.workdir / "pki") if processes is not None else None
        self.network = network
        if network is not None and len(network.nodes) < len(nodes):
            raise ValueError(f"the pod network has addresses for {len(network.nodes)} nodes")
        in_cluster: dict[str, Any] = {}
        if network is not None:
            port = network.port
            in_cluster = {
                "secure_host": SERVICE_IP,
                "secure_port": SERVICE_PORT,
                "listeners": [network.listener],
            }
        self._bridges: dict[str, NodeBridge] = {}
        """Each node's bridge once started: where the API server's pods/log and exec go."""
        self.server = ApiServer(
            host=host,
            port=port,
            dra=dra_api,
            pki=pki,
            authorization=authorization,
            log_source=functools.partial(_pod_log, self._bridges),
            exec_source=functools.partial(_pod_exec, self._bridges),
            **in_cluster,
        )
        self.mode = mode
        self.nodes = {name: self._node(name) for name in nodes}
        self._agents = agents
        self._agent_options = dict(agent_options or {})
        self._controller = controller
        self._tasks: list[asyncio.Task[None]] = []
        self._agent_tasks: dict[str, asyncio.Task[None]] = {}
        self._client: client.ApiClient | None = None

    def _node(self, name: str) -> SimNode:
        root = self.workdir / "nodes" / name
        plugins, pod_resources = root / "device-plugins", root / "pod-resources"
        plugins.mkdir(parents=True, exist_ok=True)
        pod_resources.mkdir(parents=True, exist_ok=True)
        availability = root / "debug-echo-availability"
        echo = DebugEcho(availability_file=availability)
        kubelet_dir = root / "kubelet"
        kubelet = Kubelet(
            name,
            plugins,
            pod_resources,
            plugins_registry_dir=kubelet_dir / "plugins_registry",
            cdi_dir=kubelet_dir / "cdi",
            host_dirs=node_host_dirs(root),
        )
        return SimNode(
            name, kubelet, plugins, pod_resources, root / "akri", kubelet_dir, echo, availability
        )

    def api_client(self) -> client.ApiClient:
        """The cluster's own client (valid while it runs)."""
        if self._client is None:
            raise RuntimeError("the cluster is not running")
        return self._client

    async def start(self) -> None:
        """Everything started so far is stopped again (and the temp dir removed) when starting
        fails or is cancelled (a Ctrl-C during start-up)."""
        try:
            await self._start()
        except BaseException:
            await self.stop()
            raise

    async def _start(self) -> None:
        await self.server.start()
        self.server.write_kubeconfig(self.kubeconfig)
        await self.server.apply_definitions(crd_definitions())
        self._client = await load_client(self.kubeconfig)
        for node in self.nodes.values():
            await node.kubelet.start()
            bridge = NodeBridge(node.kubelet, self._client, processes=self._runtime(node))
            self._bridges[node.name] = bridge
            self._spawn(bridge.run(), f"node-{node.name}")
            if self._agents:
                self.start_agent(node.name)
        self._spawn(Scheduler(self._client).run(), "scheduler")
        self._spawn(WorkloadControllers(self._client).run(), "workload-controllers")
        self._spawn(DisruptionController(self._client).run(), "disruption-controller")
        if self._controller is not None:
            tuning = await resolved(
                self._client, dataclasses.replace(self._controller, mode=self.mode)
            )
            controller = Controller(self._client, tuning, metrics=ControllerMetrics())
            self._spawn(controller.run(), "controller")

    def start_agent(self, name: str) -> Agent:
        """Run a new akri agent on node `name` (after `stop_agent`, its restart)."""
        node = self.nodes[name]
        if name in self._agent_tasks:
            raise RuntimeError(f"the agent of {name} is running")
        node.agent = Agent(
            self._agent_settings(node), api_client=self.api_client(), handlers=[node.debug_echo]
        )
        self._agent_tasks[name] = self._spawn(node.agent.run(), f"agent-{name}")
        return node.agent

    async def stop_agent(self, name: str) -> None:
        """Stop the agent of node `name` as a deleted agent Pod stops (SIGTERM)."""
        task = self._agent_tasks.pop(name)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        self._tasks.remove(task)

    def _runtime(self, node: SimNode) -> Processes | None:
        options, pki = self._processes, self.server.pki
        if options is None or pki is None:
            return None
        network = None
        if self.network is not None:
            network = self.network.nodes[list(self.nodes).index(node.name)]
        settings = RuntimeSettings(
            sim_image=options.image,
            bin_dir=Path(sys.executable).parent,
            api_host="127.0.0.1" if network is None else SERVICE_IP,
            api_port=self.server.secure_port,
            ca_file=pki.ca_file,
            token=options.token or self._service_account_token,
            backoff_initial_s=options.backoff_initial_s,
            backoff_max_s=options.backoff_max_s,
        )
        host = NodeHost(node.name, node.host_path, node.root / "pods")
        if network is not None:
            host = dataclasses.replace(host, host_ip=network.gateway, network=network)
        return Processes(settings, host, self._fetch)

    def _service_account_token(self, pod: Mapping[str, Any]) -> str:
        """A token for the pod's ServiceAccount bound to the pod (so it names the pod's node),
        valid for a day (never rotated)."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        account = spec.get("serviceAccountName") or "default"
        bound = {"kind": "Pod", "name": meta["name"], "uid": meta.get("uid", "")}
        try:
            answer = self.server.tokens.token_request(
                meta["namespace"], account,
                {"spec": {"expirationSeconds": TOKEN_LIFETIME_S, "boundObjectRef": bound}},
            )  # fmt: skip
            return str(answer["status"]["token"])
        except errors.ApiError as error:
            raise LookupError(f'serviceaccount "{account}" not found') from error

    async def _fetch(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        core = client.CoreV1Api(self.api_client())
        read = core.read_namespaced_secret if kind == "Secret" else core.read_namespaced_config_map
        try:
            return await call(read, name, namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def _agent_settings(self, node: SimNode) -> AgentSettings:
        node.discovery_handlers_dir.mkdir(parents=True, exist_ok=True)
        return AgentSettings(
            agent_node_name=node.name,
            kubeconfig=self.kubeconfig,
            device_plugins_dir=node.device_plugins_dir,
            pod_resources_socket=node.pod_resources_dir / "kubelet.sock",
            discovery_handlers_directory=node.discovery_handlers_dir,
            metrics_port=0,
            akri_mode=self.mode,
            plugins_registry_dir=node.kubelet_dir / "plugins_registry",
            kubelet_plugins_dir=node.kubelet_dir / "plugins",
            cdi_dir=node.kubelet_dir / "cdi",
            **self._agent_options,
        )

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """Run a component; one that fails is logged loudly (the others go on, as in a cluster)."""

        def report(task: asyncio.Task[None]) -> None:
            if not task.cancelled() and task.exception() is not None:
                log.error("%s stopped: %r", name, task.exception())

        task = asyncio.create_task(work, name=name)
        task.add_done_callback(report)
        self._tasks.append(task)
        return task

    async def stop(self) -> None:
        # Nodes first: a kubelet hanging up on its plugins is a requested stop, while plugins
        # vanishing under a running kubelet is worth the kubelet's warning.
        for node in self.nodes.values():
            await node.kubelet.stop()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        self._agent_tasks.clear()
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self.server.stop()
        if self._owned_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
