"""A kubelet's gRPC side for one simulated node: device-plugin registration, PodResources and
DRA plugins.

Speaks the real protocols over real unix sockets, so an agent cannot tell it from a kubelet:
it serves `v1beta1.Registration` on `<device_plugins_dir>/kubelet.sock` and `v1.PodResourcesLister`
on `<pod_resources_dir>/kubelet.sock`, admits pods through its device manager, and, given a
`plugins_registry_dir`, registers the DRA plugins whose sockets appear there
(`akri.sim.kubelet.plugin_watcher`, `akri.sim.kubelet.dra`).

Differences from a real kubelet, on purpose:
- `call_timeout` bounds GetDevicePluginOptions, GetPreferredAllocation and Allocate (default
  30 s) so a hung plugin fails a test instead of hanging it; a real kubelet sets no deadline
  (None here). The agent must bound its own Allocate either way.
- The checkpoint is kept in memory, not written to `kubelet_internal_checkpoint`.
- A stopped endpoint's resource is dropped exactly at the grace period, not at the next
  node-status sync; pods' devices are freed on `remove_pod`, not lazily at the next admission.
- PreStartContainer is never called: no containers are started.
- `stop()` removes both kubelet.sock files (a crashed kubelet would leave them stale).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

import grpc

from akri import grpc_servers
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import add_RegistrationServicer_to_server
from akri.proto.deviceplugin.v1beta1.constants import KUBELET_SOCKET_NAME
from akri.proto.pluginregistration.v1.constants import DRA_PLUGIN
from akri.proto.podresources.v1.api_pb2_grpc import add_PodResourcesListerServicer_to_server
from akri.service import Service
from akri.sim.kubelet.changes import Changes
from akri.sim.kubelet.dra import DraManager
from akri.sim.kubelet.manager import DeviceManager, Timing
from akri.sim.kubelet.model import AdmittedPod, Container, PodSpec, ResourceStatus
from akri.sim.kubelet.plugin_watcher import PluginWatcher
from akri.sim.kubelet.podresources import PodResourcesLister
from akri.sim.kubelet.registration import Registration

log = logging.getLogger(__name__)

DIAL_TIMEOUT_S: Final = 10.0
"""The kubelet's blocking dial of a registering plugin."""
DEFAULT_CALL_TIMEOUT_S: Final = 30.0
"""Emulator-only deadline on plugin calls (a real kubelet has none); None disables it."""
ENDPOINT_STOP_GRACE_PERIOD_S: Final = 300.0
"""How long a resource whose plugin went away keeps its (unhealthy) capacity."""
DEPRECATION_FILE: Final = "DEPRECATION"
_DEPRECATION_NOTICE = (
    "Device plugins may also register through the kubelet's plugin watcher "
    "(plugins_registry); kubelet.sock stays supported.\n"
)


class Kubelet(Service):
    """One node's kubelet emulator; use as `async with Kubelet(...) as kubelet:`."""

    def __init__(
        self,
        node_name: str,
        device_plugins_dir: Path,
        pod_resources_dir: Path,
        *,
        dial_timeout: float = DIAL_TIMEOUT_S,
        call_timeout: float | None = DEFAULT_CALL_TIMEOUT_S,
        endpoint_stop_grace_period: float = ENDPOINT_STOP_GRACE_PERIOD_S,
        plugins_registry_dir: Path | None = None,
        cdi_dir: Path | None = None,
        host_dirs: Mapping[str, Path] | None = None,
    ) -> None:
        """`plugins_registry_dir`: the node's plugins_registry, where DRA plugins register
        (none: no DRA); `cdi_dir`: where the node's container runtime finds CDI specs;
        `host_dirs`: the node's host directories (by their path on a node) on this machine, so
        a plugin in a pod can give its socket by its host path, as on a node."""
        self.node_name = node_name
        self.device_plugins_dir = Path(device_plugins_dir)
        self.pod_resources_dir = Path(pod_resources_dir)
        self._changes = Changes()
        timing = Timing(dial_timeout, call_timeout, endpoint_stop_grace_period)
        self._manager = DeviceManager(timing, self._changes.notify)
        self._registration: grpc.aio.Server | None = None
        self._pod_resources: grpc.aio.Server | None = None
        self.plugins_registry_dir = plugins_registry_dir
        self.cdi_dirs = [cdi_dir] if cdi_dir is not None else []
        self._host_dirs = dict(host_dirs or {})
        self.dra = DraManager(self._changes.notify)
        self._plugin_watcher: asyncio.Task[None] | None = None
        self.starts = 0
        """How often this kubelet started (a restart is a new start)."""

    @property
    def socket(self) -> Path:
        """The Registration socket plugins call."""
        return self.device_plugins_dir / KUBELET_SOCKET_NAME

    @property
    def pod_resources_socket(self) -> Path:
        return self.pod_resources_dir / KUBELET_SOCKET_NAME

    @property
    def running(self) -> bool:
        return self._registration is not None

    async def start(self) -> None:
        """Start like a kubelet: wipe every socket in the device-plugins dir, then serve."""
        if self.running:
            raise RuntimeError(f"kubelet of {self.node_name} is already running")
        self.device_plugins_dir.mkdir(parents=True, exist_ok=True)
        self.pod_resources_dir.mkdir(parents=True, exist_ok=True)
        _remove_sockets(self.device_plugins_dir)
        (self.device_plugins_dir / DEPRECATION_FILE).write_text(_DEPRECATION_NOTICE)
        self._manager.restore()
        self._pod_resources = await _serve(
            self.pod_resources_socket,
            lambda server: add_PodResourcesListerServicer_to_server(
                PodResourcesLister(self._manager), server
            ),
        )
        self._registration = await _serve(
            self.socket,
            lambda server: add_RegistrationServicer_to_server(
                Registration(self._manager, self.device_plugins_dir), server
            ),
        )
        if self.plugins_registry_dir is not None:
            self.plugins_registry_dir.mkdir(parents=True, exist_ok=True)  # as pluginwatcher's init
            watcher = PluginWatcher(
                self.plugins_registry_dir, {DRA_PLUGIN: self.dra}, host_dirs=self._host_dirs
            )
            self._plugin_watcher = asyncio.create_task(
                watcher.run(), name=f"plugin-watcher-{self.node_name}"
            )
        self.starts += 1
        self._changes.notify()
        log.info("kubelet of %s serving %s", self.node_name, self.socket)

    async def stop(self) -> None:
        """Node down: stop serving, hang up on every plugin; admitted pods are remembered."""
        registration, self._registration = self._registration, None
        pod_resources, self._pod_resources = self._pod_resources, None
        watcher, self._plugin_watcher = self._plugin_watcher, None
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        await self.dra.shutdown()
        if registration is not None:
            await registration.stop(grace=None)
        await self._manager.shutdown()
        if pod_resources is not None:
            await pod_resources.stop(grace=None)
        for socket in (self.socket, self.pod_resources_socket):
            socket.unlink(missing_ok=True)

    async def restart(self) -> None:
        """Plugins see their sockets deleted and kubelet.sock re-created, and must re-register."""
        await self.stop()
        await self.start()

    async def admit(
        self,
        pod_uid: str,
        pod_name: str,
        namespace: str,
        init_containers: Sequence[Container] = (),
        containers: Sequence[Container] = (),
    ) -> AdmittedPod:
        """Admit a pod or raise AdmissionError (reason UnexpectedAdmissionError on failure)."""
        if not self.running:
            raise RuntimeError(f"kubelet of {self.node_name} is not running")
        spec = PodSpec(pod_uid, pod_name, namespace, tuple(init_containers), tuple(containers))
        return await self._manager.admit(spec)

    def remove_pod(self, pod_uid: str) -> bool:
        """The pod was deleted or completed: free its devices. False if it was unknown."""
        return self._manager.remove_pod(pod_uid)

    @property
    def pods(self) -> Mapping[str, AdmittedPod]:
        """Admitted pods by uid (read-only view)."""
        return self._manager.pods

    def resources(self) -> dict[str, ResourceStatus]:
        """Every extended resource the device manager knows, by name."""
        return self._manager.statuses()

    def resource(self, name: str) -> ResourceStatus | None:
        """One extended resource (cheaper than `resources()` on a node with a thousand)."""
        return self._manager.status(name)

    def capacity(self) -> dict[str, int]:
        return {name: status.capacity for name, status in self.resources().items()}

    def allocatable(self) -> dict[str, int]:
        return {name: status.allocatable for name, status in self.resources().items()}

    def registered_resources(self) -> set[str]:
        """Resources with a live plugin endpoint."""
        return {name for name, status in self.resources().items() if status.registered}

    @property
    def registrations(self) -> Mapping[str, int]:
        """Successful Register calls per resource since this object was created."""
        return self._manager.registrations

    @property
    def version(self) -> int:
        """Bumped on every change of resources or pods."""
        return self._changes.version

    async def wait_for(self, condition: Callable[[], bool]) -> None:
        """Wait until `condition()` holds, re-checking after each change.

        Never waits forever by itself: bound it, e.g. `async with asyncio.timeout(5):`.
        """
        await self._changes.wait_for(condition)


async def _serve(socket: Path, add_servicer: Callable[[grpc.aio.Server], None]) -> grpc.aio.Server:
    server = grpc.aio.server()
    add_servicer(server)
    server.add_insecure_port(f"unix://{socket}")
    await grpc_servers.start(server)
    return server


def _remove_sockets(directory: Path) -> None:
    """What the kubelet does at start: sockets go, the checkpoint and other files stay."""
    for path in directory.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(path.lstat().st_mode):
                path.unlink()
