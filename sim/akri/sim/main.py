"""`akri sim`: a local cluster for trying Configurations without Kubernetes.

It runs until interrupted and prints what to type to look at it with kubectl.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from akri.controller.context import Tuning
from akri.discovery.debug_echo import DEFAULT_AVAILABILITY_FILE
from akri.dra.mode import Mode, resolve
from akri.durations import OFFLINE_GRACE_S
from akri.sim.akri_pods import akri_workloads
from akri.sim.chart import NAMESPACE, RELEASE
from akri.sim.chart import values as chart_values
from akri.sim.cluster import Cluster, RuntimeOptions
from akri.sim.helm import HelmSession
from akri.sim.manifests import apply_documents, load_documents
from akri.sim.podnet.cluster import ClusterNetwork, Unavailable, enter

log = logging.getLogger(__name__)


def banner(cluster: Cluster, applied: Sequence[str], mode: Mode | None = None) -> str:
    """What runs and what to try; `mode`: how akri offers devices (auto resolved), if it runs."""
    kubeconfig = cluster.kubeconfig
    nodes = ", ".join(cluster.nodes)
    lines = [
        "akri sim: local cluster running",
        f"  API server  {cluster.server.url}",
        f"  nodes       {nodes}",
        f"  kubeconfig  {kubeconfig}",
    ]
    if mode is not None:
        offered = "Dynamic Resource Allocation" if mode is Mode.DRA else "kubelet device plugins"
        chosen = f" (chosen by --mode {cluster.mode})" if cluster.mode is not mode else ""
        lines.append(f"  mode        {mode}: devices offered through {offered}{chosen}")
    lines += [f"  applied     {name}" for name in applied]
    first = next(iter(cluster.nodes.values()))
    lines += [
        "Try:",
        f"  export KUBECONFIG={kubeconfig}",
        "  kubectl get nodes,pods -A -o wide",
        "  kubectl get akric,akrii -A",
        f"  kubectl describe node {first.name}",
    ]
    where = None
    if first.agent is not None:
        where = (first.debug_echo_file, f"on {first.name}")
    elif cluster.network is not None:  # the chart's agents: their embedded debugEcho's file
        where = (DEFAULT_AVAILABILITY_FILE, "on every node")
    if where is not None:
        availability, nodes_seeing = where
        lines += [
            f"  echo foo0 > {availability}   # debugEcho foo0 offline {nodes_seeing}",
            f"  rm {availability}             # and back",
            f"  akri-discovery-handler mdns --registration-dir {first.discovery_handlers_dir}",
        ]
    lines.append("Stop with Ctrl-C.")
    return "\n".join(lines)


async def run(
    nodes: Sequence[str],
    *,
    port: int,
    kubeconfig: Path,
    workdir: Path | None,
    manifests: Sequence[Path],
    akri: bool = True,
    offline_grace: float = OFFLINE_GRACE_S,
    mode: Mode = Mode.DEVICE_PLUGIN,
    processes: bool = False,
    chart: Path | None = None,
    network: ClusterNetwork | None = None,
) -> int:
    """With `processes`, pods of the project's image run as real processes, and akri runs as a
    cluster runs it: an agent DaemonSet and a controller Deployment (see akri.sim.akri_pods).
    With `chart`, that Helm chart is installed by the real Helm engine instead (akri.sim.chart
    has its values). Either way, each pod has its own network in the pod `network` this process
    has entered (`pod_network`); without it, pods share this machine's network."""
    documents = load_documents(manifests)  # fail on a bad file before starting anything
    if chart is not None and network is None:
        raise ValueError("installing the chart needs the pod network")
    kubeconfig.parent.mkdir(parents=True, exist_ok=True)
    components: dict[str, Any] = {}
    if chart is not None:
        components = {"processes": RuntimeOptions(), "network": network}
    elif processes:
        components = {"processes": RuntimeOptions(), "network": network}
        if akri:
            image = components["processes"].image
            documents = [*akri_workloads(image, offline_grace_s=offline_grace), *documents]
    elif akri:
        agent_options = {"offline_grace": offline_grace}
        components = {"agents": True, "controller": Tuning(), "agent_options": agent_options}
    loop = asyncio.get_running_loop()
    with Interruption(asyncio.current_task(), loop) as interruption:
        try:
            async with Cluster(
                nodes,
                port=port,
                kubeconfig=kubeconfig,
                workdir=workdir,
                mode=mode,
                authorization=True,
                **components,
            ) as cluster:
                applied = []
                if chart is not None:
                    values = chart_values(offline_grace_s=offline_grace)
                    values["mode"] = mode.value
                    applied.append(await install_chart(cluster, chart, values))
                applied += await apply_documents(cluster.api_client(), documents)
                running = await resolve(mode, cluster.api_client()) if akri else None
                print(banner(cluster, applied, running), flush=True)
                await asyncio.Event().wait()  # until interrupted
        except asyncio.CancelledError:
            if not interruption.requested:
                raise
    await loop.shutdown_default_executor()
    return 0


class Interruption:
    """`with Interruption(task, loop)`: the first Ctrl-C (or SIGTERM) at any moment, the chart's
    install included, cancels `task`, which stops whatever runs in order (cluster, agents,
    controllers, Helm) and removes the temp dir; later signals change nothing."""

    def __init__(self, task: asyncio.Task[Any] | None, loop: asyncio.AbstractEventLoop) -> None:
        self._task = task
        self._loop = loop
        self.requested = False

    def __enter__(self) -> Interruption:
        for signum in SIGNALS:
            self._loop.add_signal_handler(signum, self._interrupt)
        return self

    def __exit__(self, *_: object) -> None:
        for signum in SIGNALS:
            self._loop.remove_signal_handler(signum)

    def _interrupt(self) -> None:
        if self.requested or self._task is None:
            return
        self.requested = True
        print("akri sim: stopping", file=sys.stderr, flush=True)
        self._task.cancel()


SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


CHART_FALLBACK = (
    "running the akri agents and controller inside the simulator, with the debugEcho example, "
    "instead of installing the chart"
)


def pod_network(node_count: int, port: int, instead: str) -> ClusterNetwork | None:
    """Enter the cluster's pod network (before any thread starts); None, and one line on
    stderr saying why and what happens `instead`, where this machine cannot make one."""
    try:
        return enter(node_count, port)
    except Unavailable as why:
        print(
            f"akri sim: pods cannot get their own network here ({why}): {instead}",
            file=sys.stderr,
            flush=True,
        )
        return None


async def install_chart(cluster: Cluster, chart: Path, values: dict[str, Any]) -> str:
    """`helm install --wait` of `chart` as release akri in namespace akri; what the banner says.
    Raises RuntimeError with Helm's message when the install fails."""
    print(f"akri sim: installing {chart} (waiting for its pods)", file=sys.stderr, flush=True)
    async with HelmSession(cluster.kubeconfig, chart) as helm:
        installed = await helm("install", RELEASE, NAMESPACE, values)
    if "error" in installed:
        raise RuntimeError(f"helm install {chart}: {installed['error']}")
    return f"{chart} (release {RELEASE} in namespace {NAMESPACE})"
