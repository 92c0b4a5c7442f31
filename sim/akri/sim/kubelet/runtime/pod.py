"""A pod of the project's image, run by a simulated kubelet as local processes.

Each container is a process in a private mount namespace (`unshare --mount`) in which its
volumes are bind-mounted at their real paths: hostPath volumes from the node's simulated host
directories, emptyDir volumes from the pod's directory, configMap volumes written there from their
ConfigMap, and the service-account token, CA and
namespace at `/var/run/secrets/kubernetes.io/serviceaccount`; its env has what its devices
add (device plugins' Allocate answers, the edits of its CDI devices). The program sees what it
would see in a pod and reaches the API server the in-cluster way. Processes that exit are restarted
by `restartPolicy` with the kubelet's back-off; probes set readiness and restart containers
that fail liveness; output goes to per-run log files `kubectl logs` reads.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import shlex
import signal
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from akri.sim.kubelet.runtime import probes, spec
from akri.sim.podnet.addresses import NodeNetwork
from akri.sim.podnet.sandbox import PARENT_DEATH, PodSandbox

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
JSON = dict[str, Any]
Fetch = Callable[[str, str, str], Awaitable[Object | None]]
"""(kind `Secret`|`ConfigMap`, namespace, name) -> the object, None when absent."""
SYSTEM_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KILL_GRACE_MAX_S: Final = 5.0
"""Simulated pods get at most this long between SIGTERM and SIGKILL."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class RuntimeSettings:
    """What every simulated kubelet's process runtime shares."""

    sim_image: str
    bin_dir: Path
    """Where the image's programs (the installed console scripts) are."""
    api_host: str
    api_port: int
    ca_file: Path
    token: Callable[[Object], str]
    """pod -> a bearer token of its service account, bound to the pod (and so naming its
    node), as the kubelet's projected token volume has it; LookupError when it has none."""
    backoff_initial_s: float = 10.0
    backoff_max_s: float = 300.0


@dataclass(frozen=True)
class NodeHost:
    """One simulated node's host side: its directories and address."""

    name: str
    host_path: spec.HostPath
    pods_dir: Path
    host_ip: str = "127.0.0.1"
    network: NodeNetwork | None = None
    """The node's share of the pod network; None: every pod shares this machine's network."""


@dataclass
class _Container:
    spec: Object
    has_process: bool = True
    """False for another image's container: it runs without a process (see `_idle`)."""
    restart_count: int = 0
    state: JSON = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: JSON = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    process: asyncio.subprocess.Process | None = None
    env: dict[str, str] = field(default_factory=dict)
    done: bool = False

    @property
    def name(self) -> str:
        return str(self.spec["name"])


class PodRuntime:
    """Runs one pod's containers until `stop()`; `changed()` is called when its status moves."""

    def __init__(
        self,
        pod: Object,
        node: NodeHost,
        settings: RuntimeSettings,
        fetch: Fetch,
        changed: Callable[[], None],
        device_env: Mapping[str, Mapping[str, str]] | None = None,
    ) -> None:
        """`device_env`: container -> the env its devices add (device plugins' Allocate
        answers, CDI edits), applied over the container's own env as a runtime applies them."""
        self._pod = pod
        self._device_env = device_env or {}
        self._node = node
        self._settings = settings
        self._fetch = fetch
        self._changed = changed
        meta = pod["metadata"]
        self.directory = node.pods_dir / f"{meta['namespace']}_{meta['name']}_{meta['uid']}"
        self._containers = [
            _Container(c, spec.runs_as_process(str(c.get("image", "")), settings.sim_image))
            for c in (pod.get("spec") or {}).get("containers") or []
        ]
        self._tasks: list[asyncio.Task[None]] = []
        self._started_at = _now()
        self._sandbox: PodSandbox | None = None
        self._sandbox_made: asyncio.Task[None] | None = None
        self.pod_ip = node.host_ip
        network = node.network
        if network is not None and not (pod.get("spec") or {}).get("hostNetwork"):
            self.pod_ip = network.allocate()
            self._sandbox = PodSandbox(network, self.pod_ip)

    def start(self) -> None:
        if self._sandbox is not None:
            self._sandbox_made = asyncio.create_task(
                self._sandbox.create(), name=f"sandbox-{self._pod['metadata']['name']}"
            )
        for container in self._containers:
            self._tasks.append(
                asyncio.create_task(
                    self._supervise(container),
                    name=f"container-{self._pod['metadata']['name']}-{container.name}",
                )
            )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await asyncio.gather(*(self._kill(c) for c in self._containers))
        if self._sandbox is not None:
            if self._sandbox_made is not None:
                self._sandbox_made.cancel()
                await asyncio.gather(self._sandbox_made, return_exceptions=True)
            await self._sandbox.destroy()
            self._sandbox.node.release(self.pod_ip)
            self._sandbox = None

    # --- status ----------------------------------------------------------------------------

    def status(self) -> JSON:
        """The pod status a kubelet writes for the containers' current states."""
        now = _now()
        ready = all(c.ready for c in self._containers)
        finished = all(c.done for c in self._containers)
        failed = any(c.state.get("terminated", {}).get("exitCode") for c in self._containers)
        phase = ("Failed" if failed else "Succeeded") if finished else "Running"
        if all("waiting" in c.state and not c.restart_count for c in self._containers):
            phase = "Pending"
        conditions = [
            {"type": kind, "status": "True" if value else "False", "lastTransitionTime": now}
            for kind, value in (
                ("PodReadyToStartContainers", True),
                ("Initialized", True),
                ("ContainersReady", ready),
                ("Ready", ready),
                ("PodScheduled", True),
            )
        ]
        statuses = []
        for container in self._containers:
            entry: JSON = {
                "name": container.name,
                "image": container.spec.get("image", ""),
                "imageID": "",
                "containerID": f"sim://{self.directory.name}/{container.name}",
                "ready": container.ready,
                "started": container.started,
                "restartCount": container.restart_count,
                "state": container.state,
                "lastState": container.last_state,
            }
            statuses.append(entry)
        return {
            "phase": phase,
            "hostIP": self._node.host_ip,
            "podIP": self.pod_ip,
            "podIPs": [{"ip": self.pod_ip}],
            "startTime": self._started_at,
            "conditions": conditions,
            "containerStatuses": statuses,
        }

    def log_text(self, container: str, previous: bool) -> str:
        """The output of the container's current (or previous) run."""
        found = next((c for c in self._containers if c.name == container), None)
        if found is None:
            return ""
        run = found.restart_count - (1 if previous else 0)
        if run < 0:
            raise LookupError(f'previous terminated container "{container}" not found')
        path = self._log_file(found, run)
        return path.read_text(errors="replace") if path.exists() else ""

    async def exec(
        self, container: str, command: Sequence[str], stdin: bool
    ) -> asyncio.subprocess.Process:
        """`command` in the running container's mount and network namespaces, with its env
        (`kubectl exec`); LookupError when the container runs no process now."""
        found = next((c for c in self._containers if c.name == container), None)
        if found is None or not found.has_process:
            image = "" if found is None else found.spec.get("image", "")
            raise LookupError(f"container {container} runs no process in akri sim (image {image})")
        process = found.process
        if process is None or process.returncode is not None:
            raise LookupError(f"container {container} is not running")
        return await asyncio.create_subprocess_exec(
            "nsenter", f"--target={process.pid}", "--mount", "--net", "--", *command,
            env=found.env,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=found.spec.get("workingDir") or "/", start_new_session=True,
        )  # fmt: skip

    # --- containers ------------------------------------------------------------------------

    def _log_file(self, container: _Container, run: int) -> Path:
        return self.directory / "logs" / container.name / f"{run}.log"

    def _write_service_account(self) -> None:
        meta = self._pod["metadata"]
        directory = self.directory / "serviceaccount"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "token").write_text(self._settings.token(self._pod))
        (directory / "ca.crt").write_bytes(self._settings.ca_file.read_bytes())
        (directory / "namespace").write_text(meta["namespace"])

    def _host_path(self, path: str) -> Path:
        return self._node.host_path(path)

    async def _environment(self, container: _Container) -> dict[str, str]:
        namespace = self._pod["metadata"]["namespace"]
        refs: dict[tuple[str, str], Object | None] = {}
        for variable in container.spec.get("env") or []:
            source = variable.get("valueFrom") or {}
            for kind, key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
                if key in source:
                    name = source[key].get("name", "")
                    refs[(kind, name)] = await self._fetch(kind, namespace, name)

        def lookup(kind: str, name: str, key: str) -> str | None:
            obj = refs.get((kind, name)) or {}
            if kind == "Secret":
                data = obj.get("data") or {}
                return base64.b64decode(data[key]).decode() if key in data else None
            value = (obj.get("data") or {}).get(key)
            return None if value is None else str(value)

        settings = self._settings
        base = {
            "PATH": f"{settings.bin_dir}:{SYSTEM_PATH}",
            "HOME": "/root",
            "HOSTNAME": self._pod["metadata"]["name"],
            "KUBERNETES_SERVICE_HOST": settings.api_host,
            "KUBERNETES_SERVICE_PORT": str(settings.api_port),
            "KUBERNETES_SERVICE_PORT_HTTPS": str(settings.api_port),
            "KUBERNETES_PORT": f"tcp://{settings.api_host}:{settings.api_port}",
        }
        pod = {**self._pod, "status": {"podIP": self.pod_ip, "hostIP": self._node.host_ip}}
        env = spec.environment(pod, container.spec, base, lookup)
        env.update(self._device_env.get(container.name, {}))
        return env

    def _launch_argv(self, mounts: Sequence[spec.Mount], argv: Sequence[str]) -> list[str]:
        """unshare + a shell that binds every volume at its path, then execs the program."""
        lines = ["set -e"]
        for mount in mounts:
            source, target = shlex.quote(str(mount.source)), shlex.quote(mount.target)
            lines.append(
                f"if [ -d {source} ]; then mkdir -p {target}; "
                f"else mkdir -p $(dirname {target}); touch {target}; fi"
            )
            lines.append(f"mount --bind {source} {target}")
            if mount.read_only:
                lines.append(f"mount -o remount,bind,ro {target}")
        lines.append('exec "$@"')
        script = "\n".join(lines)
        network = self._sandbox.enter if self._sandbox is not None else []
        return [
            *PARENT_DEATH,
            *network,
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            *argv,
        ]

    async def _write_config_maps(self) -> None:
        """configMap volumes: each key of the ConfigMap a file (read afresh at every start)."""
        namespace = self._pod["metadata"]["namespace"]
        for volume in (self._pod.get("spec") or {}).get("volumes") or []:
            source = volume.get("configMap")
            if source is None:
                continue
            found = await self._fetch("ConfigMap", namespace, source.get("name", ""))
            directory = self.directory / "volumes" / volume["name"]
            directory.mkdir(parents=True, exist_ok=True)
            for key, value in ((found or {}).get("data") or {}).items():
                (directory / key).write_text(str(value))

    async def _start_process(self, container: _Container) -> asyncio.subprocess.Process:
        self._write_service_account()  # a fresh token for every start
        await self._write_config_maps()
        container.env = await self._environment(container)
        argv = spec.command_line(container.spec, container.env)
        program = self._settings.bin_dir / argv[0]
        if "/" not in argv[0] and program.exists():
            argv[0] = str(program)
        mounts = spec.mounts(
            self._pod,
            container.spec,
            self._host_path,
            self.directory,
            self.directory / "serviceaccount",
        )
        for mount in mounts:
            if not mount.source.exists():
                mount.source.mkdir(parents=True, exist_ok=True)
        log_file = self._log_file(container, container.restart_count)
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with log_file.open("ab") as output:
            return await asyncio.create_subprocess_exec(
                *self._launch_argv(mounts, argv),
                env=container.env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=asyncio.subprocess.STDOUT,
                cwd=container.spec.get("workingDir") or "/",
                start_new_session=True,
            )

    async def _supervise(self, container: _Container) -> None:
        if self._sandbox_made is not None:
            try:
                await asyncio.shield(self._sandbox_made)
            except OSError as error:
                log.error("pod %s has no network: %s", self._pod["metadata"]["name"], error)
                message = f"failed to set up the pod's network: {error}"
                container.state = {"waiting": {"reason": "ContainerCreating", "message": message}}
                self._changed()
                return
        if not container.has_process:
            await self._idle(container)
            return
        policy = (self._pod.get("spec") or {}).get("restartPolicy", "Always")
        while True:
            try:
                container.process = await self._start_process(container)
            except (OSError, ValueError, LookupError) as error:
                container.state = {
                    "waiting": {"reason": "CreateContainerConfigError", "message": str(error)}
                }
                self._changed()
                exit_code = 128
            else:
                exit_code = await self._run(container, container.process)
            restart = policy == "Always" or (policy == "OnFailure" and exit_code != 0)
            if not restart:
                container.done = True
                self._changed()
                return
            container.restart_count += 1
            delay = self._backoff(container.restart_count)
            container.state = {
                "waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {delay:g}s restarting failed container={container.name} "
                    f"pod={self._pod['metadata']['name']}",
                }
            }
            self._changed()
            await asyncio.sleep(delay)

    async def _idle(self, container: _Container) -> None:
        """A container of an image the simulator cannot run: Running and ready, no process,
        until the pod stops (its pod still has its network, as a runtime's sandbox would)."""
        container.state = {"running": {"startedAt": _now()}}
        container.started = container.ready = True
        self._changed()
        await asyncio.get_running_loop().create_future()

    def _backoff(self, restarts: int) -> float:
        """The first restart is immediate; then the initial back-off, doubling up to the cap."""
        if restarts <= 1:
            return 0.0
        settings = self._settings
        return float(min(settings.backoff_max_s, settings.backoff_initial_s * 2 ** (restarts - 2)))

    async def _run(self, container: _Container, process: asyncio.subprocess.Process) -> int:
        """Until the process ends (or fails liveness): state Running, probes followed."""
        started_at = _now()
        container.state = {"running": {"startedAt": started_at}}
        container.started = True
        container.ready = "readinessProbe" not in container.spec
        self._changed()
        watchers = self._probes(container, process)
        try:
            returned = await process.wait()
            exit_code = 128 - returned if returned < 0 else returned  # killed: 128 + signal
        finally:
            for watcher in watchers:
                watcher.cancel()
            await asyncio.gather(*watchers, return_exceptions=True)
        container.ready = False
        container.last_state = {
            "terminated": {
                "exitCode": exit_code,
                "reason": "Completed" if exit_code == 0 else "Error",
                "startedAt": started_at,
                "finishedAt": _now(),
            }
        }
        container.state = dict(container.last_state)
        return exit_code

    def _probes(
        self, container: _Container, process: asyncio.subprocess.Process
    ) -> list[asyncio.Task[None]]:
        async def connect(
            host: str, port: int
        ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
            return await asyncio.open_connection(host, port)

        async def run(command: Sequence[str]) -> int:
            checker = await asyncio.create_subprocess_exec(
                "nsenter", f"--target={process.pid}", "--mount", "--net", "--", *command,
                env=container.env,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
            )  # fmt: skip
            try:
                return await checker.wait()
            finally:
                if checker.returncode is None:
                    checker.kill()
                    await checker.wait()

        def readiness(ok: bool) -> None:
            container.ready = ok
            self._changed()

        def liveness(ok: bool) -> None:
            if not ok:
                log.info("container %s failed its liveness probe; restarting", container.name)
                self._tasks.append(asyncio.create_task(self._kill(container)))

        watchers = []
        for key, changed in (("readinessProbe", readiness), ("livenessProbe", liveness)):
            probe = container.spec.get(key)
            if probe:
                watchers.append(
                    asyncio.create_task(
                        probes.follow(probe, container.spec, self.pod_ip, connect, run, changed)
                    )
                )
        return watchers

    async def _kill(self, container: _Container) -> None:
        """SIGTERM to the container's process group, SIGKILL after the grace period."""
        process = container.process
        if process is None or process.returncode is not None:
            return
        grace = min(
            float((self._pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)),
            KILL_GRACE_MAX_S,
        )
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            # No shield: a cancelled stop must leave no task waiting on the process behind.
            async with asyncio.timeout(grace):
                await process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
