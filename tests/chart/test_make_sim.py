"""`make sim` as a user runs it (the Makefile's own command line): two nodes, the chart installed
by the real Helm engine, an agent pod per node and two controller replicas as real processes,
each pod in its own network namespace with its own address, the webhook reached through its
Service, brokers Running; and after Ctrl-C nothing is left: no process, network namespace,
link or mount of the simulator's."""

from __future__ import annotations

import asyncio
import ipaddress
import json
import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.chart.webhook import refused_at_apply
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually, needs_pod_network

ROOT = Path(__file__).parents[2]
pytestmark = [
    pytest.mark.slow,
    needs_kubectl,
    needs_pod_network,
]
NAMESPACE = "akri"


def make_sim_command() -> list[str]:
    """The Makefile's `sim` recipe, with the venv's `akri` as this interpreter's."""
    recipe = re.search(r"^sim:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no sim recipe"
    words = shlex.split(recipe.group(1))
    assert words[0] == "$(BIN)/akri", words
    return [sys.executable, "-m", "akri.cli", *words[1:]]


def descendants(pid: int) -> dict[int, str]:
    """Every process below `pid`, with its start time (to tell a reused pid)."""
    children: dict[int, list[int]] = {}
    started: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry.name))
            started[int(entry.name)] = fields[19]
    found: dict[int, str] = {}
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found[child] = started[child]
            stack.append(child)
    return found


def alive(processes: dict[int, str]) -> list[int]:
    left = []
    for pid, start in processes.items():
        try:
            if (Path("/proc", str(pid), "stat").read_text().rsplit(")", 1)[1].split())[19] == start:
                left.append(pid)
        except OSError:
            continue
    return left


def network_namespaces(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            found.add(os.readlink(f"/proc/{pid}/ns/net"))
        except OSError:
            continue
    return found


def all_network_namespaces() -> set[str]:
    return network_namespaces([int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()])


def mounts() -> str:
    return Path("/proc/self/mountinfo").read_text()


def links() -> list[str]:
    listed = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return sorted(line.split(":")[1].strip() for line in listed.stdout.splitlines())


async def items(kubectl: Kubectl, *args: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(await kubectl("get", *args, "-o", "json"))["items"]
    return listed


@pytest.mark.timeout(400)
@pytest.mark.parametrize(
    ("stop", "exit_code"), [(signal.SIGINT, 0), (signal.SIGKILL, -9)], ids=["ctrl-c", "killed"]
)
async def test_make_sim_runs_the_charts_pods_on_two_nodes_and_leaves_nothing(
    socket_dir: Path, tmp_path: Path, stop: signal.Signals, exit_code: int
) -> None:
    """Stopped with Ctrl-C, or killed: its pods' processes die with it either way."""
    kubeconfig, workdir = socket_dir / "kubeconfig", socket_dir / "w"
    links_before = links()
    sim = await asyncio.create_subprocess_exec(
        *make_sim_command(), "--kubeconfig", str(kubeconfig), "--workdir", str(workdir),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    kubectl = Kubectl(kubeconfig, tmp_path, namespace=NAMESPACE)
    try:
        assert sim.stdout is not None
        banner = await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 300)
        assert b"applied     helm/akri (release akri in namespace akri)" in banner

        async def running() -> list[dict[str, Any]] | None:
            pods = await items(kubectl, "pods")
            phases = [p.get("status", {}).get("phase") for p in pods]
            brokers = [p for p in pods if "akri.sh/instance" in p["metadata"].get("labels", {})]
            return pods if len(brokers) == 4 and set(phases) == {"Running"} else None

        pods = await eventually(running, "the chart's pods and four brokers Running", 120)
        component = "app.kubernetes.io/component"
        agents = [p for p in pods if p["metadata"]["labels"].get(component) == "agent"]
        controllers = [p for p in pods if p["metadata"]["labels"].get(component) == "controller"]
        assert sorted(p["spec"]["nodeName"] for p in agents) == ["node-0", "node-1"]
        assert len(controllers) == 2, "the chart's default replicas"
        for pod in pods:  # brokers too: their nginx runs without a process, in its network
            node = int(pod["spec"]["nodeName"].split("-")[1])
            address = ipaddress.IPv4Address(pod["status"]["podIP"])
            assert address in ipaddress.IPv4Network(f"10.244.{node}.0/24"), pod["status"]
            assert pod["status"]["hostIP"] == f"10.244.{node}.1"
            assert pod["status"]["podIPs"] == [{"ip": str(address)}]
        addresses = {p["status"]["podIP"] for p in pods}
        assert len(addresses) == len(pods) == 8, "each pod its own address"
        for found in await items(kubectl, "nodes"):
            index = found["metadata"]["name"].split("-")[1]
            assert found["spec"]["podCIDR"] == f"10.244.{index}.0/24"
            internal = [a for a in found["status"]["addresses"] if a["type"] == "InternalIP"]
            assert internal == [{"type": "InternalIP", "address": f"10.244.{index}.1"}]
        wide = (await kubectl("get", "nodes", "-o", "wide")).splitlines()
        at = wide[0].index("INTERNAL-IP")
        assert [line[at:].split()[0] for line in wide[1:]] == ["10.244.0.1", "10.244.1.1"]
        api = json.loads(
            await kubectl("get", "service", "kubernetes", "-n", "default", "-o", "json")
        )
        assert api["spec"]["clusterIP"] == "10.96.0.1", "where the pods' in-cluster config goes"

        (lease,) = await items(kubectl, "leases")
        holder = lease["spec"]["holderIdentity"]
        assert any(holder.startswith(p["metadata"]["name"]) for p in controllers), holder
        instances = await items(kubectl, "akrii")
        assert sorted(sorted(i["spec"]["nodes"]) for i in instances) == [["node-0", "node-1"]] * 2

        await refused_at_apply(kubectl, tmp_path)

        server = kubeconfig.read_text().split("server: ")[1].split()[0]
        async with aiohttp.ClientSession() as session, session.get(f"{server}/_sim/access") as r:
            calls = await r.json()
        users = {c["user"] for c in calls if c["user"].startswith("system:serviceaccount:akri")}
        assert {"system:serviceaccount:akri:akri-agent"} <= users
        assert {"system:serviceaccount:akri:akri-controller"} <= users
        assert [c for c in calls if c["user"] in users and not c["allowed"]] == []

        processes = descendants(sim.pid)
        namespaces = network_namespaces(list(processes)) | network_namespaces([sim.pid])
        assert len(namespaces) >= 1 + 8, "the simulator's own and one per pod"
        assert os.readlink("/proc/self/ns/net") not in namespaces
    finally:
        if sim.returncode is None:
            sim.send_signal(stop)
        _, errors = await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == exit_code, errors.decode()
    # Killed, its children die at once (their parent-death signal) and are reaped by init.
    await eventually(lambda: alive(processes) == [], "no process outliving the simulator", 10)
    gone = namespaces.isdisjoint
    await eventually(lambda: gone(all_network_namespaces()), "no network namespace of it", 10)
    assert links() == links_before, "this machine's network changed"
    assert str(workdir) not in mounts(), "mounts outlived it"
