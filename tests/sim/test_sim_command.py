"""`akri sim` as a user runs it, checked with the real kubectl."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

import pytest

from tests.support import eventually

EXAMPLE = Path(__file__).parents[2] / "crds" / "examples" / "debugEcho.yaml"
CHART = Path(__file__).parents[2] / "helm" / "akri"
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


async def akri(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "akri.cli", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


async def kubectl(kubeconfig: Path, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(kubeconfig), *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
    )  # fmt: skip
    output, _ = await process.communicate()
    return process.returncode or 0, output.decode()


async def stopped(sim: asyncio.subprocess.Process) -> str:
    """Ctrl-C (unless it ended already); its stderr, once it exited with 0."""
    if sim.returncode is None:
        sim.send_signal(signal.SIGINT)
    _, errors = await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == 0, errors.decode()
    return errors.decode()


async def pods_running(kubeconfig: Path, count: int, what: str) -> None:
    """Until kubectl lists `count` Running pods in the default namespace."""

    async def listed() -> bool:
        code, output = await kubectl(kubeconfig, "get", "pods", "--no-headers")
        return code == 0 and output.count(" Running ") == count

    await eventually(listed, what, deadline_s=60)


@needs_kubectl
async def test_sim_serves_kubectl_and_stops_quietly_on_ctrl_c(socket_dir: Path) -> None:
    kubeconfig = socket_dir / "kubeconfig"
    sim = await akri(
        "sim", "--nodes", "2", "--kubeconfig", str(kubeconfig), "--apply", str(EXAMPLE)
    )
    try:
        assert sim.stdout is not None
        banner = await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 60)
        assert f"kubeconfig  {kubeconfig}".encode() in banner
        assert b"applied     configuration/akri-debug-echo-foo" in banner

        async def both_nodes_ready() -> str | None:
            code, output = await kubectl(kubeconfig, "get", "nodes,ns")
            ready = output.count(" Ready ") == 2 and "namespace/default" in output
            return output if code == 0 and ready else None

        output = await eventually(both_nodes_ready, "kubectl to list two Ready nodes")
        assert "node/node-0" in output
        assert "node/node-1" in output
        code, output = await kubectl(kubeconfig, "get", "akric")
        assert code == 0
        assert "akri-debug-echo-foo" in output

        await pods_running(kubeconfig, 4, "four brokers Running")
    finally:
        errors = await stopped(sim)
    # Issue 16: every ListAndWatch used to end with a warning ("Cancelling all calls").
    assert errors.split("akri sim: stopping\n")[1] == ""


async def test_bad_node_list_is_a_usage_error() -> None:
    sim = await akri("sim", "--nodes", "a,a")
    _, errors = await sim.communicate()
    assert sim.returncode == 2
    assert b"distinct comma-separated names" in errors


async def test_missing_manifest_is_reported_before_anything_starts(socket_dir: Path) -> None:
    sim = await akri(
        "sim", "--apply", str(socket_dir / "nope.yaml"), "--kubeconfig", str(socket_dir / "k")
    )
    _, errors = await sim.communicate()
    assert sim.returncode == 1
    assert b"nope.yaml" in errors


@pytest.mark.slow
@needs_kubectl
@pytest.mark.skipif(os.geteuid() != 0, reason="the process runtime needs root")
async def test_sim_runs_akri_as_pods_of_its_image(socket_dir: Path) -> None:
    """`--workloads processes`: agents and controller are processes the kubelets run."""
    kubeconfig = socket_dir / "kubeconfig"
    sim = await akri(
        "sim", "--workloads", "processes", "--kubeconfig", str(kubeconfig),
        "--workdir", str(socket_dir / "w"), "--apply", str(EXAMPLE),
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 60)

        async def brokers_running() -> str | None:
            code, output = await kubectl(kubeconfig, "get", "pods", "-A", "--no-headers")
            brokers = [
                line for line in output.splitlines() if "-foo-" in line and "Running" in line
            ]
            return output if code == 0 and len(brokers) == 4 else None

        output = await eventually(brokers_running, "the controller's four brokers", 60)
        assert output.count("akri-agent-") == 2
        assert output.count("akri-controller-") == 1
        assert _processes_under(socket_dir), "no container process found"
    finally:
        if sim.returncode is None:
            sim.send_signal(signal.SIGTERM)
        _, errors = await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == 0, errors.decode()
    assert not _processes_under(socket_dir), "akri processes outlived the simulator"


def _processes_under(directory: Path) -> list[str]:
    """Pids of processes whose mounts come from `directory` (the simulator's pod containers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                mounts = (proc / "mountinfo").read_text()
            except OSError:
                continue
            if str(directory) in mounts:
                found.append(proc.name)
    return found


@needs_kubectl
async def test_without_root_the_chart_gives_way_to_akri_in_process(socket_dir: Path) -> None:
    """Where pods cannot get a network (here: not root), `--chart` says why in one line and the
    agents and controller run inside the simulator with the debugEcho example."""
    kubeconfig = socket_dir / "kubeconfig"
    # Root's own user id seen from a user namespace of its own, which maps none: the process
    # is not root there, yet still owns the checkout and this directory (which may be private).
    not_root = ["unshare", "--user", "--"]
    sim = await asyncio.create_subprocess_exec(
        *(not_root if os.geteuid() == 0 else []),
        sys.executable, "-m", "akri.cli", "sim", "--nodes", "1", "--chart", str(CHART),
        "--kubeconfig", str(kubeconfig), "--workdir", str(socket_dir / "w"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=Path(__file__).parents[2], env={**os.environ, "HOME": str(socket_dir)},
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        banner = await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 60)
        assert b"applied     configuration/akri-debug-echo-foo" in banner

        await pods_running(kubeconfig, 2, "two brokers of the in-process akri")
    finally:
        errors = await stopped(sim)
    (why,) = [line for line in errors.splitlines() if "own network" in line]
    assert why.startswith("akri sim: pods cannot get their own network here (not root): ")
