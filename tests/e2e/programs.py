"""The installed `akri-agent` and `akri-controller` programs as child processes on the rig.

Each runs with the environment its chart template gives it, pointed at the rig's paths
(a hollow node's kubelet directories instead of /var/lib/kubelet), and writes its log to a
file the test keeps for a failure's diagnosis. Nothing here reads those logs to decide a test.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path

from akri.agent.settings import AgentSettings
from akri.controller.settings import ControllerSettings
from akri.dra.mode import Mode
from tests.e2e.rig import Node

SCRIPTS = Path(sys.executable).parent
STOP_DEADLINE_S = 30.0
# Fast slot reclaim and node-loss handling, so freed slots and lost nodes show within seconds.
RECLAIM = {"RECLAIM_GRACE": "2s", "RECLAIM_INTERVAL": "1s"}
NODE_GRACE = "5s"

HOST_SPECIFIC = (
    "KUBECONFIG",
    "DEVICE_PLUGINS_DIR",
    "POD_RESOURCES_SOCKET",
    "DISCOVERY_HANDLERS_DIRECTORY",
    "PLUGINS_REGISTRY_DIR",
    "KUBELET_PLUGINS_DIR",
    "CDI_DIR",
    "DEBUG_ECHO_AVAILABILITY_FILE",
    "METRICS_PORT",
)
"""The agent's variables that name this host's paths and ports: the rig's, whatever a chart
says (its DaemonSet names the kubelet's standard paths)."""

_SETTINGS = {
    name.upper() for name in (*AgentSettings.model_fields, *ControllerSettings.model_fields)
}


def _environment(variables: Mapping[str, str]) -> dict[str, str]:
    """The test's environment without anything the programs read, plus `variables`."""
    return {k: v for k, v in os.environ.items() if k.upper() not in _SETTINGS} | dict(variables)


class Program:
    """One installed console script run as a child process, restartable, its log in a file."""

    def __init__(self, script: str, variables: Mapping[str, str], log: Path) -> None:
        self.script = script
        self.variables = dict(variables)
        self.log = log
        self._process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        with self.log.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                str(SCRIPTS / self.script),
                env=_environment(self.variables),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def kill(self) -> None:
        """SIGKILL: no clean-up of sockets, plugins or records, as a crash or an OOM kill."""
        await self._end(signal.SIGKILL)

    async def stop(self) -> None:
        """SIGTERM, as the kubelet stops a container; SIGKILL when it does not end in time."""
        await self._end(signal.SIGTERM)

    async def _end(self, how: signal.Signals) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(how)
        try:
            async with asyncio.timeout(STOP_DEADLINE_S):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


def agent(
    node: Node,
    kubeconfig: Path,
    namespace: str,
    workdir: Path,
    *,
    mode: Mode,
    shared: bool,
) -> Program:
    """`akri-agent` on `node` with an embedded debugEcho, following `namespace` only."""
    own = workdir / node.name
    own.mkdir(parents=True, exist_ok=True)
    variables = {
        "AGENT_NODE_NAME": node.name,
        "KUBECONFIG": str(kubeconfig),
        "AKRI_NAMESPACE": namespace,
        "AKRI_MODE": mode.value,
        "ENABLE_DEBUG_ECHO": "true",
        "DEBUG_ECHO_INSTANCES_SHARED": str(shared).lower(),
        "DEBUG_ECHO_AVAILABILITY_FILE": str(own / "availability"),
        "DEVICE_PLUGINS_DIR": str(node.device_plugins_dir),
        "POD_RESOURCES_SOCKET": str(node.pod_resources_socket),
        "DISCOVERY_HANDLERS_DIRECTORY": str(own),
        "PLUGINS_REGISTRY_DIR": str(node.plugins_registry_dir),
        "KUBELET_PLUGINS_DIR": str(node.kubelet_plugins_dir),
        "CDI_DIR": str(cdi_dir(workdir, node.name)),
        "METRICS_PORT": "0",
        "LOG_FORMAT": "text",
        **RECLAIM,
    }
    return Program("akri-agent", variables, workdir / f"agent-{node.name}.log")


def cdi_dir(workdir: Path, node: str) -> Path:
    """Where the agent on `node` writes the CDI specs of the claims it prepared."""
    return workdir / node / "cdi"


def controller(
    kubeconfig: Path,
    namespace: str,
    workdir: Path,
    *,
    mode: Mode,
    extra: Mapping[str, str] | None = None,
) -> Program:
    """`akri-controller`, one replica (no leader election), following `namespace` only."""
    variables = {
        "KUBECONFIG": str(kubeconfig),
        "AKRI_NAMESPACE": namespace,
        "POD_NAMESPACE": namespace,
        "AKRI_MODE": mode.value,
        "LEADER_ELECTION": "false",
        "NODE_GRACE": NODE_GRACE,
        "METRICS_PORT": "0",
        "LOG_FORMAT": "text",
    }
    return Program("akri-controller", variables, workdir / "controller.log")
