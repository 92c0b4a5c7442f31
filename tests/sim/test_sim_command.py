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


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["--nodes", "a,a"], "--nodes wants a count or distinct comma-separated names"),
        (["--nodes", "0"], "--nodes wants at least one node, got '0'"),
        (["--nodes", "node-0,Bad_Name"], "--nodes: 'Bad_Name' is not a Node name (lowercase"),
        (["--chart", "nosuchdir"], "--chart nosuchdir: not a Helm chart directory"),
    ],
)
async def test_bad_arguments_are_one_line_and_leave_nothing_behind(
    socket_dir: Path, arguments: list[str], said: str
) -> None:
    """Issue 27: `--nodes 0` crashed with StopIteration, `--nodes Bad_Name` dumped a pydantic
    error and tracebacks and left its temp dir, `--chart nosuchdir` failed inside Helm."""
    temp = socket_dir / "tmp"
    temp.mkdir()
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "akri.cli", "sim", *arguments,
        "--kubeconfig", str(socket_dir / "sim" / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(temp)},
    )  # fmt: skip
    output, errors = await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == 2
    assert output == b""
    (line,) = errors.decode().splitlines()
    assert line.startswith(f"akri sim: {said}")
    assert not list(temp.iterdir())
    assert not (socket_dir / "sim").exists()


async def test_missing_manifest_is_reported_before_anything_starts(socket_dir: Path) -> None:
    sim = await akri(
        "sim", "--apply", str(socket_dir / "nope.yaml"), "--kubeconfig", str(socket_dir / "k")
    )
    _, errors = await sim.communicate()
    assert sim.returncode == 1
    assert b"nope.yaml" in errors


async def interrupted(sim: asyncio.subprocess.Process) -> list[str]:
    """One Ctrl-C; the lines of stderr after the process exited, which must be with 0."""
    sim.send_signal(signal.SIGINT)
    _, errors = await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == 0, errors.decode()
    return errors.decode().splitlines()


async def test_one_ctrl_c_during_start_up_stops_everything_quietly(socket_dir: Path) -> None:
    """Issue 27: Ctrl-C before the cluster ran did nothing until start-up ended. Now it stops
    whatever started (the in-process agents and controller included) and removes the temp
    dir, with one line and no traceback."""
    temp = socket_dir / "tmp"
    temp.mkdir()
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "akri.cli", "sim", "--kubeconfig", str(socket_dir / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(temp)},
    )  # fmt: skip
    await eventually(lambda: any(temp.iterdir()), "the sim to start making its cluster", 60)

    assert await interrupted(sim) == ["akri sim: stopping"]
    assert not list(temp.iterdir())


@pytest.mark.slow
@pytest.mark.timeout(400)
@pytest.mark.skipif(os.geteuid() != 0, reason="pods of the chart need root for their network")
async def test_one_ctrl_c_while_the_chart_installs_stops_everything_quietly(
    socket_dir: Path,
) -> None:
    """Issue 27: Ctrl-C while Helm waited for the chart's pods printed a KeyboardInterrupt
    traceback from the Helm session and left the sim, agents and controllers running."""
    temp = socket_dir / "tmp"
    temp.mkdir()
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "akri.cli", "sim", "--chart", str(CHART),
        "--kubeconfig", str(socket_dir / "kubeconfig"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(temp)}, start_new_session=True,
    )  # fmt: skip
    try:
        assert sim.stderr is not None
        installing = await asyncio.wait_for(sim.stderr.readuntil(b"(waiting for its pods)\n"), 180)
        workdir = next(temp.iterdir())

        async def akri_pods_started() -> bool:
            return bool(_processes_under(workdir))

        await eventually(akri_pods_started, "the chart's pods to start", 120)
        # Ctrl-C at a terminal reaches its whole foreground process group.
        os.killpg(sim.pid, signal.SIGINT)
        _, errors = await asyncio.wait_for(sim.communicate(), 60)
    finally:
        if sim.returncode is None:
            os.killpg(sim.pid, signal.SIGKILL)
            await sim.wait()

    assert sim.returncode == 0, errors.decode()
    assert (installing + errors).decode().splitlines()[-1] == "akri sim: stopping"
    assert b"Traceback" not in errors
    assert not _processes_under(workdir)
    assert not list(temp.iterdir())


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
