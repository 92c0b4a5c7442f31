"""Controller benchmark: 100 nodes x 50 shared Instances on the API emulator (no kubelets).

Measures how long the controller takes to create all 5000 broker Pods, how many API requests
it issues per Instance (counted by the emulator), and how many writes it makes per minute once
everything exists (must be 0). Run: `python bench/bench_controller.py [--steady-seconds N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import VERBS, WRITES, Section, counting, finish, quiet_logs
from kubernetes_asyncio import client

from akri import naming
from akri.api import Configuration, crd_definitions, new_instance
from akri.controller.context import Tuning
from akri.controller.controller import Controller
from akri.controller.metrics import ControllerMetrics
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client
from akri.sim.kubelet.objects import node_status

NODES = 100
INSTANCES = 50
NAMESPACE = "default"
TARGET_S = 60.0
POD_SPEC = {
    "containers": [
        {
            "name": "broker",
            "image": "nginx:stable",
            "resources": {"limits": {naming.PLACEHOLDER: "1"}},
        }
    ]
}


async def populate(api: client.ApiClient) -> None:
    """Ready Nodes, one Configuration and its Instances, as kubelets and agents write them."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    now = "2026-01-01T00:00:00Z"
    status = node_status({}, (), ready=True, heartbeat=now, transition=now)
    nodes = [f"node-{i:03d}" for i in range(NODES)]
    for node in nodes:
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=node)))
        await core.patch_node_status(node, {"status": status})
    body = {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": "bench", "namespace": NAMESPACE},
        "spec": {
            "discoveryHandler": {"name": "debugEcho"},
            "capacity": 2,
            "brokerSpec": {"brokerPodSpec": POD_SPEC},
        },
    }
    configuration = Configuration.from_wire(
        await custom.create_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "configurations", body
        )
    )
    for i in range(INSTANCES):
        instance = new_instance(configuration, f"device-{i}", nodes[0], shared=True, properties={})
        instance.spec.nodes = nodes
        await custom.create_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", instance.to_wire()
        )


def pod_count(server: ApiServer) -> int:
    pods = server.operations.kind("", "v1", "pods")
    return len(server.operations.store.objects(pods.key, NAMESPACE))


async def wait_for_pods(server: ApiServer, wanted: int, deadline_s: float) -> float | None:
    started = time.monotonic()
    while pod_count(server) < wanted:
        if time.monotonic() - started > deadline_s:
            return None
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def bench(steady_s: float) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="akri-bench-") as workdir:
        async with ApiServer() as server:
            await server.apply_definitions(crd_definitions())
            kubeconfig = server.write_kubeconfig(Path(workdir) / "kubeconfig")
            async with await load_client(kubeconfig) as setup:
                await populate(setup)
            async with await load_client(kubeconfig) as api:
                controller = Controller(api, Tuning(), metrics=ControllerMetrics())
                with counting(server) as requests:
                    task = asyncio.create_task(controller.run())
                    try:
                        elapsed = await wait_for_pods(server, NODES * INSTANCES, TARGET_S * 3)
                        await asyncio.sleep(1.0)  # let trailing status writes and events land
                        counts = {verb: rule.hits for verb, rule in requests.items()}
                        for rule in requests.values():
                            rule.hits = 0
                        await asyncio.sleep(steady_s)
                        steady_writes = sum(requests[verb].hits for verb in WRITES)
                    finally:
                        task.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await task
    total = sum(counts.values())
    took = "did not finish" if elapsed is None else f"{elapsed:.1f} s"
    rows.append(("broker Pods", f"{pod_count_label()}"))
    rows.append(("time until all broker Pods exist", f"{took} (target <= {TARGET_S:.0f} s)"))
    rows.append(("API requests per Instance", f"{total / INSTANCES:.1f}"))
    for verb in VERBS:
        rows.append((f"  {verb}", f"{counts[verb]} total, {counts[verb] / INSTANCES:.2f}/Instance"))
    per_minute = steady_writes * 60.0 / steady_s
    rows.append((f"steady-state writes per minute ({steady_s:.0f} s)", f"{per_minute:.1f}"))
    return rows


def pod_count_label() -> str:
    return f"{NODES * INSTANCES} ({NODES} nodes x {INSTANCES} shared Instances)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steady-seconds", type=float, default=20.0)
    args = parser.parse_args()
    quiet_logs()
    began, load = time.monotonic(), os.getloadavg()[0]
    rows = asyncio.run(bench(args.steady_seconds))
    finish(
        [Section(f"controller: {NODES} nodes x {INSTANCES} shared Instances", rows)], began, load
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
