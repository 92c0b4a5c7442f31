"""The kubelet's plugin manager: registration sockets in `plugins_registry`, over the real
`pluginregistration.Registration` protocol.

Rules, each from the kubelet source:
- Sockets are found by watching the directory (pkg/kubelet/pluginmanager/pluginwatcher/
  plugin_watcher.go): only sockets count, names starting with "." are ignored, sockets already
  there when the kubelet starts are found too (traversePluginDir).
- A reconciler compares what is there with what is registered
  (pkg/kubelet/pluginmanager/reconciler/reconciler.go): a socket that is gone, or was made
  again (a newer timestamp), is deregistered, and one not registered is registered; a plugin
  that failed before its handler took it (dial, GetInfo, type, validation) is tried again at a
  later pass.
- Registering (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go,
  GenerateRegisterPluginFunc): dial the socket (10 s), `GetInfo` with a 1 s deadline; no
  handler for `PluginInfo.type`, or the handler's ValidatePlugin refusing, is reported with
  `NotifyRegistrationStatus(false, <why>)`; an empty endpoint means the registration socket
  itself; after the handler's RegisterPlugin, `NotifyRegistrationStatus(true)`.

Differences, on purpose: the directory is polled (every `poll_s`) instead of watched with
inotify, and a pass runs at that period instead of once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

import grpc

from akri.proto.pluginregistration.v1 import api_pb2 as pb
from akri.proto.pluginregistration.v1.api_pb2_grpc import RegistrationStub
from akri.sim.host_paths import local_path

if TYPE_CHECKING:
    from akri.proto.pluginregistration.v1.api_pb2_grpc import RegistrationAsyncStub

log = logging.getLogger(__name__)

DIAL_TIMEOUT_S: Final = 10.0  # operation_executor.go dialTimeoutDuration
GET_INFO_TIMEOUT_S: Final = 1.0
NOTIFY_TIMEOUT_S: Final = 10.0  # operation_executor.go notifyTimeoutDuration
POLL_S: Final = 0.1


class RegistrationRefused(Exception):
    """What a handler's ValidatePlugin or RegisterPlugin refuses, said to the plugin."""


class PluginHandler(Protocol):
    """A kubelet component that takes plugins of one type (pkg/kubelet/pluginmanager/cache)."""

    def validate(self, name: str, endpoint: str, versions: Sequence[str]) -> None: ...

    async def register(self, name: str, endpoint: str, versions: Sequence[str]) -> None: ...

    async def deregister(self, name: str, endpoint: str) -> None: ...


@dataclass(frozen=True)
class _Registered:
    timestamp: int
    handler: PluginHandler
    name: str
    endpoint: str


class PluginWatcher:
    """`run()` until cancelled; `handlers` maps a PluginInfo type to its handler."""

    def __init__(
        self,
        directory: Path,
        handlers: Mapping[str, PluginHandler],
        poll_s: float = POLL_S,
        host_dirs: Mapping[str, Path] | None = None,
    ) -> None:
        """`host_dirs`: node host directories (e.g. `/var/lib/kubelet/plugins`) -> where they
        are on this machine, for endpoints a plugin in a pod reports by their host path."""
        self.directory = directory
        self._handlers = handlers
        self._poll_s = poll_s
        self._host_dirs = dict(host_dirs or {})
        self._registered: dict[Path, _Registered] = {}

    def _local(self, endpoint: str) -> str:
        return str(local_path(self._host_dirs, endpoint) or endpoint)

    async def run(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            while True:
                await self._reconcile(_sockets(self.directory))
                await asyncio.sleep(self._poll_s)
        finally:
            await asyncio.shield(self._deregister_all())

    async def _deregister_all(self) -> None:
        """The kubelet stopping: every plugin's handler forgets it."""
        for path in list(self._registered):
            await self._deregister(path)

    async def _reconcile(self, present: Mapping[Path, int]) -> None:
        for path, registered in list(self._registered.items()):
            if present.get(path) != registered.timestamp:
                await self._deregister(path)
        for path, timestamp in sorted(present.items()):
            if path not in self._registered:
                failure = await self._register(path, timestamp)
                if failure is not None:
                    log.warning("plugin at %s not registered: %s", path, failure)

    async def _deregister(self, path: Path) -> None:
        registered = self._registered.pop(path)
        await registered.handler.deregister(registered.name, registered.endpoint)
        log.info("plugin %s at %s deregistered", registered.name, path)

    async def _register(self, path: Path, timestamp: int) -> str | None:
        """Why the plugin is not registered, if it is not.

        Returns a string rather than raising so that no traceback (holding the channel)
        outlives the call.
        """
        try:
            await self._try_register(path, timestamp)
        except (grpc.aio.AioRpcError, RegistrationRefused, TimeoutError) as error:
            return str(error) or type(error).__name__
        return None

    async def _try_register(self, path: Path, timestamp: int) -> None:
        async with grpc.aio.insecure_channel(f"unix://{path}") as channel:
            async with asyncio.timeout(DIAL_TIMEOUT_S):
                await channel.channel_ready()
            stub: RegistrationAsyncStub = RegistrationStub(channel)
            info = await stub.GetInfo(pb.InfoRequest(), timeout=GET_INFO_TIMEOUT_S)
            handler = self._handlers.get(info.type)
            endpoint = self._local(info.endpoint) if info.endpoint else str(path)
            try:
                if handler is None:
                    raise RegistrationRefused(f"no handler registered for plugin type: {info.type}")
                handler.validate(info.name, endpoint, info.supported_versions)
                # Recorded before the handler runs, as upstream: a refusal by RegisterPlugin is
                # not retried until the socket is made again.
                self._registered[path] = _Registered(timestamp, handler, info.name, endpoint)
                await handler.register(info.name, endpoint, info.supported_versions)
            except RegistrationRefused as error:
                status = pb.RegistrationStatus(plugin_registered=False, error=str(error))
                await stub.NotifyRegistrationStatus(status, timeout=NOTIFY_TIMEOUT_S)
                raise
            status = pb.RegistrationStatus(plugin_registered=True)
            await stub.NotifyRegistrationStatus(status, timeout=NOTIFY_TIMEOUT_S)
        log.info("plugin %s of type %s registered from %s", info.name, info.type, path)


def _sockets(directory: Path) -> dict[Path, int]:
    """Registration sockets by path, with the time they were made."""
    found = {}
    with contextlib.suppress(FileNotFoundError):
        for path in directory.iterdir():
            if path.name.startswith("."):
                continue
            with contextlib.suppress(FileNotFoundError):
                status = path.lstat()
                if stat.S_ISSOCK(status.st_mode):
                    found[path] = status.st_mtime_ns
    return found
