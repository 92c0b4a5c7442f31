"""What the image installs: the wheel, built from this tree and installed into a fresh venv.

No container engine runs here, so the image's contents are tested without it: the wheel the
Dockerfile builds is built the same way (once per session), installed into a new venv that
sees only the wheel's files (its dependencies come from this venv's site-packages, so nothing
is downloaded), and each program is run from there. The Dockerfile itself goes through hadolint.
The simulator is its own distribution (akri-sim, sim/): the product's wheel and image carry none
of it, and its own wheel adds `akri sim` to a venv that has the product's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from email.parser import HeaderParser
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from akri.sim.apiserver import ApiServer
from tests.agent.running_agents import Api, configuration
from tests.support import DEADLINE_S, eventually

ROOT = Path(__file__).parents[2]
PROGRAMS = ["akri", "akri-agent", "akri-controller", "akri-discovery-handler"]
EXIT_DEADLINE_S = 2 * DEADLINE_S  # a Python process starting and exiting: only a hang reaches it
SIM_ONLY_REQUIREMENTS = {"cel-python", "jsonpatch"}


def _build_wheel(source: Path, out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
         "--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (built,) = out.glob("*.whl")
    return built


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = _build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))
    assert built.name.startswith("akri_py-")
    return built


@pytest.fixture(scope="session")
def sim_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = _build_wheel(ROOT / "sim", tmp_path_factory.mktemp("sim-wheel"))
    assert built.name.startswith("akri_sim-")
    return built


@pytest.fixture(scope="session")
def dependencies(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This venv's third-party packages without its akri distributions (or their .pth files),
    which would otherwise be found beside the wheels' own."""
    target = tmp_path_factory.mktemp("dependencies")
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        name = entry.name.lower()
        if not (name.startswith(("akri", "__editable__")) or name.endswith(".pth")):
            (target / entry.name).symlink_to(entry)
    return target


def _venv(wheels: list[Path], dependencies: Path, target: Path) -> Path:
    """A fresh venv with `wheels`; the dependencies are this venv's, the sources are not."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    python = target / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
         "--no-index", *map(str, wheels)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # A plain path line: the .pth files of a directory it names are not processed.
    (Path(purelib) / "dependencies.pth").write_text(f"{dependencies}\n")
    return target


@pytest.fixture(scope="session")
def venv(wheel: Path, dependencies: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the image holds: the product's wheel alone."""
    return _venv([wheel], dependencies, tmp_path_factory.mktemp("venv"))


@pytest.fixture(scope="session")
def sim_venv(
    wheel: Path, sim_wheel: Path, dependencies: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    return _venv([wheel, sim_wheel], dependencies, tmp_path_factory.mktemp("sim-venv"))


def _metadata(wheel: Path) -> tuple[set[str], str, dict[str, list[str]]]:
    """The wheel's files, its entry_points.txt and its METADATA headers (name -> values)."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        headers = HeaderParser().parsestr(archive.read(metadata).decode())
        return names, archive.read(entry_points).decode(), {
            key: headers.get_all(key) or [] for key in set(headers.keys())
        }  # fmt: skip


def _requirement_names(metadata: dict[str, list[str]]) -> set[str]:
    """The names of what the distribution requires to run (not of its extras)."""
    return {
        re.split(r"[<>=!~; \[]", requirement, maxsplit=1)[0].lower()
        for requirement in metadata.get("Requires-Dist", [])
        if "extra ==" not in requirement
    }


def test_the_wheel_holds_every_component_and_its_programs(wheel: Path) -> None:
    names, scripts, _ = _metadata(wheel)
    for module in (
        "akri/cli.py", "akri/agent/main.py", "akri/controller/main.py",
        "akri/controller/webhook.py", "akri/discovery_handlers/main.py",
        "akri/proto/deviceplugin/v1beta1/api_pb2.py", "akri/proto/discovery/v0/discovery.proto",
    ):  # fmt: skip
        assert module in names
    assert not [n for n in names if n.startswith("tests/") or "__pycache__" in n]
    for program in PROGRAMS:
        assert f"{program} = " in scripts
    assert "apply = akri.controller.commands:add_apply" in scripts


def test_the_wheel_carries_no_simulator(wheel: Path) -> None:
    """Nodes at the edge install no API-server emulator: no akri.sim, nor the Kubernetes protos
    only it decodes, nor the libraries only it uses."""
    names, scripts, metadata = _metadata(wheel)
    assert [n for n in names if n.startswith("akri/sim/") or "kubernetes" in n] == []
    assert "akri.sim" not in scripts
    requirements = _requirement_names(metadata)
    assert "kubernetes-asyncio" in requirements
    assert requirements.isdisjoint(SIM_ONLY_REQUIREMENTS)


def test_the_sim_wheel_holds_the_simulator_and_requires_this_product(
    wheel: Path, sim_wheel: Path
) -> None:
    names, entry_points, metadata = _metadata(sim_wheel)
    product = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    for module in (
        "akri/sim/main.py", "akri/sim/command.py", "akri/sim/apiserver/protobuf.py",
        "akri/sim/proto/kubernetes/meta/generated.proto",
        "akri/sim/proto/kubernetes/meta/generated_pb2.pyi",
    ):  # fmt: skip
        assert module in names
    assert not [n for n in names if n.startswith("akri/") and not n.startswith("akri/sim/")]
    assert "sim = akri.sim.command:add" in entry_points
    assert f"akri-py=={product}" in metadata["Requires-Dist"]
    assert _requirement_names(metadata) >= SIM_ONLY_REQUIREMENTS


def test_the_dockerfile_copies_no_simulator() -> None:
    copied = re.findall(r"^COPY (?!--)(.+) \S+$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    sources = {source for line in copied for source in line.split()}
    assert "core" in sources
    assert not [source for source in sources if source.startswith("sim")]


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


def _akri(venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv / "bin" / "akri"), *args], capture_output=True, text=True,
        env={"PATH": os.environ["PATH"], "COLUMNS": "200"}, timeout=EXIT_DEADLINE_S,
    )  # fmt: skip


def _listed_commands(help_text: str) -> list[str]:
    return re.findall(r"^    (\S+)", help_text, re.MULTILINE)


@pytest.mark.parametrize("args", [(), ("--help",), ("--nodes", "2", "--chart", "helm/akri")])
def test_akri_sim_without_the_sim_says_where_it_comes_from(venv: Path, args: tuple[str]) -> None:
    done = _akri(venv, "sim", *args)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "akri sim comes with the akri-sim distribution: "
        "pip install akri-sim (in a clone of akri-py: pip install ./sim)\n"
    )


def test_akri_lists_the_installed_commands(venv: Path, sim_venv: Path) -> None:
    product = _akri(venv, "--help")
    assert product.returncode == 0
    assert _listed_commands(product.stdout) == ["crds", "instance-name", "apply", "cleanup"]
    with_sim = _akri(sim_venv, "--help")
    assert with_sim.returncode == 0
    assert _listed_commands(with_sim.stdout) == [
        "crds", "instance-name", "apply", "cleanup", "sim",
    ]  # fmt: skip
    sim_help = _akri(sim_venv, "sim", "--help")
    assert (sim_help.returncode, sim_help.stderr) == (0, "")
    assert sim_help.stdout.startswith("usage: akri sim")


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
