"""What the image installs: the wheel, built from this tree and installed into a fresh venv.

No container engine runs here, so the image's contents are tested without it: the wheel the
Dockerfile builds is built the same way (once per session), installed into a new venv that
sees only the wheel's files (its dependencies come from this venv's site-packages, so nothing
is downloaded), and each program is run from there. The Dockerfile itself goes through hadolint.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from akri.sim.apiserver import ApiServer
from tests.agent.running_agents import Api, configuration
from tests.support import DEADLINE_S, eventually

ROOT = Path(__file__).parents[2]
PROGRAMS = ["akri", "akri-agent", "akri-controller", "akri-discovery-handler"]
EXIT_DEADLINE_S = 2 * DEADLINE_S  # a Python process starting and exiting: only a hang reaches it


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (built,) = out.glob("akri_py-*.whl")
    return built


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel; the dependencies are this venv's, the sources are not."""
    target = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    python = target / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # A plain path line: this venv's .pth files (the editable source roots) are not processed.
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return target


def test_the_wheel_holds_every_component_and_its_programs(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith("entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    for module in (
        "akri/cli.py", "akri/agent/main.py", "akri/controller/main.py",
        "akri/controller/webhook.py", "akri/discovery_handlers/main.py", "akri/sim/main.py",
        "akri/proto/deviceplugin/v1beta1/api_pb2.py", "akri/proto/discovery/v0/discovery.proto",
    ):  # fmt: skip
        assert module in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
    for program in PROGRAMS:
        assert f"{program} = " in scripts


async def test_every_program_of_the_wheel_explains_itself(venv: Path) -> None:
    async def help_of(program: str) -> tuple[int | None, str, str]:
        process = await asyncio.create_subprocess_exec(
            str(venv / "bin" / program), "--help", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await process.communicate()
        return process.returncode, out.decode(), err.decode()

    async with asyncio.timeout(60):
        answers = await asyncio.gather(*(help_of(program) for program in PROGRAMS))
    for program, (code, out, err) in zip(PROGRAMS, answers, strict=True):
        assert code == 0, f"{program}: {err}"
        assert out.startswith(f"usage: {program}")


def test_the_programs_run_the_installed_code_not_the_source_tree(venv: Path) -> None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import akri.naming as m; print(m.__file__)"],
        capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]},
    )  # fmt: skip
    assert done.stdout.startswith(str(venv))


async def test_the_installed_agent_discovers_on_the_emulated_cluster(
    venv: Path, apiserver: ApiServer, api: client.ApiClient, socket_dir: Path, tmp_path: Path
) -> None:
    env = {
        "PATH": os.environ["PATH"],
        "AGENT_NODE_NAME": "node-w",
        "KUBECONFIG": str(apiserver.write_kubeconfig(tmp_path / "kubeconfig")),
        "ENABLE_DEBUG_ECHO": "1",
        "DEBUG_ECHO_AVAILABILITY_FILE": str(tmp_path / "availability"),
        "DEVICE_PLUGINS_DIR": str(socket_dir / "dp"),
        "POD_RESOURCES_SOCKET": str(socket_dir / "pr.sock"),
        "DISCOVERY_HANDLERS_DIRECTORY": str(socket_dir),
        "METRICS_PORT": "0",
    }
    k = Api(api)
    process = await asyncio.create_subprocess_exec(
        str(venv / "bin" / "akri-agent"), env=env, stderr=asyncio.subprocess.PIPE
    )
    try:
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of("cfg-8120fe", ["node-w"]), "an Instance")
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(EXIT_DEADLINE_S):
            _, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0
    first = json.loads(stderr.decode().splitlines()[0])
    assert first["node"] == "node-w"


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    hadolint = Path(sys.executable).parent / "hadolint"
    done = subprocess.run(
        [str(hadolint), "--no-color", str(ROOT / "Dockerfile")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
