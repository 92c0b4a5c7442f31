"""The real Kubernetes rig of ../shared/k8s as the e2e suite sees it: read from the variables its
`start` prints (the kubeconfig and each hollow node's kubelet paths), plus its scripts that
restart a kubelet or power a node off and on.

Nothing here starts the rig: `make e2e` and `.ci/run` do, or a developer's shell that sourced
its env file. Without those variables `problem()` says what is missing and the suite skips.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
DEFAULT_HOME = REPOSITORY.parent / "shared" / "k8s"
NODES = ("node-a", "node-b")
SCRIPT_DEADLINE_S = 300.0  # `start --nodes` unpacks nothing here, but a loaded host is slow


@dataclass(frozen=True)
class Node:
    """One hollow kubelet's paths: where an agent on it serves and what it reads."""

    name: str
    device_plugins_dir: Path
    pod_resources_socket: Path
    plugins_registry_dir: Path
    kubelet_root_dir: Path

    @property
    def kubelet_plugins_dir(self) -> Path:
        return self.kubelet_root_dir / "plugins"


@dataclass(frozen=True)
class Rig:
    directory: Path
    kubeconfig: Path
    home: Path
    """Where `start`, `stop-node` and `restart-kubelet` are."""
    nodes: dict[str, Node]

    async def restart_kubelet(self, node: str) -> None:
        await self._script("restart-kubelet", node)

    async def stop_node(self, node: str) -> None:
        await self._script("stop-node", node)

    async def start_nodes(self) -> None:
        """Start whatever is stopped (a node `stop_node` powered off), as `start --nodes` does."""
        await self._script("start", "--nodes")

    async def _script(self, name: str, *arguments: str) -> None:
        process = await asyncio.create_subprocess_exec(
            str(self.home / name), *arguments, "--dir", str(self.directory),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        async with asyncio.timeout(SCRIPT_DEADLINE_S):
            _, stderr = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(f"{name} {' '.join(arguments)} failed: {stderr.decode()[-2000:]}")


def _variable(node: str, what: str) -> str:
    return f"K8S_NODE_{node.removeprefix('node-').upper()}_{what}"


def _wanted() -> list[str]:
    per_node = ("DEVICE_PLUGINS_DIR", "POD_RESOURCES_SOCKET", "PLUGINS_REGISTRY_DIR")
    return ["K8S_RIG_DIR", "KUBECONFIG"] + [
        _variable(n, w) for n in NODES for w in (*per_node, "KUBELET_ROOT_DIR")
    ]


def _home() -> Path:
    return Path(os.environ.get("K8S_RIG_HOME") or DEFAULT_HOME)


def problem() -> str | None:
    """Why the suite cannot run here, or None when a rig is configured."""
    missing = [name for name in _wanted() if not os.environ.get(name)]
    if missing:
        return (
            f"no Kubernetes rig configured ({', '.join(missing[:2])}... unset): "
            "run `make e2e`, or source the env file of ../shared/k8s/start --nodes"
        )
    if not (_home() / "restart-kubelet").is_file():
        return f"the rig's scripts are not in {_home()}: set K8S_RIG_HOME"
    return None


def from_environment() -> Rig:
    env = os.environ

    def node(name: str) -> Node:
        return Node(
            name=name,
            device_plugins_dir=Path(env[_variable(name, "DEVICE_PLUGINS_DIR")]),
            pod_resources_socket=Path(env[_variable(name, "POD_RESOURCES_SOCKET")]),
            plugins_registry_dir=Path(env[_variable(name, "PLUGINS_REGISTRY_DIR")]),
            kubelet_root_dir=Path(env[_variable(name, "KUBELET_ROOT_DIR")]),
        )

    return Rig(
        directory=Path(env["K8S_RIG_DIR"]),
        kubeconfig=Path(env["KUBECONFIG"]),
        home=_home(),
        nodes={name: node(name) for name in NODES},
    )
