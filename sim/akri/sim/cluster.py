"""A whole cluster in one process: API server, simulated nodes, scheduler.

This is what `akri sim` runs for a user without Kubernetes and what the integration tests run
on. Every component talks to the others only as it would in a real cluster: through the
Kubernetes API over HTTP (kubernetes-asyncio) and through gRPC on unix sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kubernetes_asyncio import client, config

from akri.api import crd_definitions
from akri.service import Service
from akri.sim.apiserver import ApiServer
from akri.sim.kubelet import Kubelet
from akri.sim.kubelet.node import NodeBridge
from akri.sim.scheduler import Scheduler

log = logging.getLogger(__name__)


def node_names(spec: str) -> list[str]:
    """`--nodes 2` means node-0 and node-1; `--nodes a,b` names them."""
    if spec.isdigit():
        return [f"node-{i}" for i in range(int(spec))]
    names = [name.strip() for name in spec.split(",") if name.strip()]
    if not names or len(set(names)) != len(names):
        raise ValueError(f"--nodes wants a count or distinct comma-separated names, got {spec!r}")
    return names


@dataclass
class SimNode:
    """One simulated node: its kubelet emulator and the bridge publishing it to the API."""

    name: str
    kubelet: Kubelet
    device_plugins_dir: Path
    pod_resources_dir: Path


async def load_client(kubeconfig: Path) -> client.ApiClient:
    """A kubernetes-asyncio client loaded from a kubeconfig, the way a user's program loads one."""
    api: client.ApiClient = await config.new_client_from_config(
        config_file=str(kubeconfig), persist_config=False
    )
    return api


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
    ) -> None:
        # Unix socket paths are limited to 107 bytes: keep the work directory short.
        self._owned_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="akri-sim-", dir="/tmp"))
        self.kubeconfig = kubeconfig or self.workdir / "kubeconfig"
        self.server = ApiServer(host=host, port=port)
        self.nodes = {name: self._node(name) for name in nodes}
        self._tasks: list[asyncio.Task[None]] = []
        self._client: client.ApiClient | None = None

    def _node(self, name: str) -> SimNode:
        root = self.workdir / "nodes" / name
        plugins, pod_resources = root / "device-plugins", root / "pod-resources"
        plugins.mkdir(parents=True, exist_ok=True)
        pod_resources.mkdir(parents=True, exist_ok=True)
        return SimNode(name, Kubelet(name, plugins, pod_resources), plugins, pod_resources)

    def api_client(self) -> client.ApiClient:
        """The cluster's own client (valid while it runs)."""
        if self._client is None:
            raise RuntimeError("the cluster is not running")
        return self._client

    async def start(self) -> None:
        await self.server.start()
        self.server.write_kubeconfig(self.kubeconfig)
        await self.server.apply_definitions(crd_definitions())
        self._client = await load_client(self.kubeconfig)
        for node in self.nodes.values():
            await node.kubelet.start()
            bridge = NodeBridge(node.kubelet, self._client)
            self._tasks.append(asyncio.create_task(bridge.run(), name=f"node-{node.name}"))
        self._tasks.append(asyncio.create_task(Scheduler(self._client).run(), name="scheduler"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        for node in self.nodes.values():
            await node.kubelet.stop()
        if self._client is not None:
            await self._client.close()
            self._client = None
        await self.server.stop()
        if self._owned_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
