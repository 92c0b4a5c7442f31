"""The kubelet's device manager: registered resources, their devices, pods' assignments.

Holds what a real kubelet keeps in memory plus its checkpoint (admitted pods' devices and the
resources that were registered). `shutdown` drops the memory and keeps the checkpoint;
`restore` rebuilds from it the way a restarted kubelet does: every checkpointed resource comes
back with no devices and a stopped endpoint, i.e. capacity 0 until its plugin re-registers.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from akri.proto.deviceplugin.v1beta1.api_pb2 import Device, ListAndWatchResponse
from akri.proto.deviceplugin.v1beta1.constants import HEALTHY
from akri.sim.kubelet import admission
from akri.sim.kubelet.devices import DeviceInfo, ResourceDevices
from akri.sim.kubelet.endpoint import PluginEndpoint, StoppedEndpoint
from akri.sim.kubelet.model import AdmittedPod, PodSpec, RegistrationError, ResourceStatus
from akri.sim.kubelet.pods import PodDevices

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Timing:
    """Deadlines of the device manager (see `akri.sim.kubelet.kubelet` for the defaults)."""

    dial_timeout: float
    call_timeout: float | None
    endpoint_stop_grace_period: float


@dataclass
class _Resource(admission.ResourceEntry):
    plugin: PluginEndpoint | StoppedEndpoint


class DeviceManager:
    """Registration outcome, device tables and admissions of one kubelet."""

    def __init__(self, timing: Timing, on_change: Callable[[], None]) -> None:
        self._timing = timing
        self._on_change = on_change
        self._resources: dict[str, _Resource] = {}
        self._retired: set[str] = set()
        self._pods = PodDevices()
        self._checkpointed: set[str] = set()
        """Resources in the checkpoint's RegisteredDevices: those that ever sent a list."""
        self._expiry: dict[str, asyncio.TimerHandle] = {}
        self._admission = asyncio.Lock()
        self._serving = False
        self.registrations: Counter[str] = Counter()
        """Successful Register calls per resource (kubelet_device_plugin_registration_total)."""

    async def register(self, resource: str, socket: Path) -> None:
        """Connect to a plugin and make it the resource's endpoint, replacing any previous one."""
        endpoint = await PluginEndpoint.connect(
            resource,
            socket,
            dial_timeout=self._timing.dial_timeout,
            call_timeout=self._timing.call_timeout,
        )
        if not self._serving:  # the kubelet stopped while we dialled
            await endpoint.close()
            raise RegistrationError("kubelet is shutting down")
        previous = self._resources.get(resource)
        devices = previous.devices if previous is not None else ResourceDevices()
        self._resources[resource] = _Resource(devices, endpoint)
        self._retired.discard(resource)
        self._cancel_expiry(resource)
        self.registrations[resource] += 1
        endpoint.watch(
            lambda listed: self._on_devices(resource, endpoint, listed),
            lambda: self._on_stream_end(resource, endpoint),
        )
        if previous is not None:
            await previous.plugin.close()
        self._on_change()

    async def admit(self, spec: PodSpec) -> AdmittedPod:
        """Admit one pod at a time, like the kubelet's sync loop (a hung plugin blocks all)."""
        async with self._admission:
            try:
                return await admission.admit(
                    spec, resources=self._resources, retired=self._retired, pods=self._pods
                )
            finally:
                self._on_change()

    def remove_pod(self, uid: str) -> bool:
        """Free the pod's devices; False if the pod was not admitted."""
        removed = self._pods.remove(uid) is not None
        if removed:
            self._on_change()
        return removed

    async def shutdown(self) -> None:
        """Forget registrations and endpoints (closing them); keep the checkpoint."""
        self._serving = False
        for resource in list(self._expiry):
            self._cancel_expiry(resource)
        resources, self._resources = self._resources, {}
        # All at once, as a kubelet that goes down drops every connection at the same moment.
        await asyncio.gather(*(entry.plugin.close() for entry in resources.values()))
        self._on_change()

    def restore(self) -> None:
        """Bring back checkpointed resources with no devices and a stopped endpoint."""
        self._serving = True
        for resource in sorted(self._checkpointed):
            self._resources[resource] = _Resource(ResourceDevices(), StoppedEndpoint(resource))
            self._schedule_expiry(resource)
        self._on_change()

    def statuses(self) -> dict[str, ResourceStatus]:
        return {name: _status(entry) for name, entry in sorted(self._resources.items())}

    def status(self, resource: str) -> ResourceStatus | None:
        entry = self._resources.get(resource)
        return None if entry is None else _status(entry)

    def device_tables(self) -> dict[str, ResourceDevices]:
        return {name: entry.devices for name, entry in self._resources.items()}

    @property
    def pods(self) -> Mapping[str, AdmittedPod]:
        return self._pods.pods

    def _on_devices(
        self, resource: str, endpoint: PluginEndpoint, response: ListAndWatchResponse
    ) -> None:
        entry = self._resources.get(resource)
        if entry is None or entry.plugin is not endpoint:
            return  # a replaced endpoint's last words
        self._checkpointed.add(resource)  # the kubelet checkpoints on every list it receives
        if entry.devices.receive(response, functools.partial(_device_table, response.devices)):
            self._on_change()

    def _on_stream_end(self, resource: str, endpoint: PluginEndpoint) -> None:
        entry = self._resources.get(resource)
        if entry is None or entry.plugin is not endpoint:
            return
        entry.devices.mark_unhealthy()
        self._schedule_expiry(resource)
        self._on_change()

    def _schedule_expiry(self, resource: str) -> None:
        """A stopped endpoint not re-registered within the grace period is dropped."""
        self._cancel_expiry(resource)
        loop = asyncio.get_running_loop()
        grace = self._timing.endpoint_stop_grace_period
        self._expiry[resource] = loop.call_later(grace, self._expire, resource)

    def _cancel_expiry(self, resource: str) -> None:
        handle = self._expiry.pop(resource, None)
        if handle is not None:
            handle.cancel()

    def _expire(self, resource: str) -> None:
        self._expiry.pop(resource, None)
        entry = self._resources.get(resource)
        if entry is None or not entry.plugin.stopped:
            return
        log.info("dropping %s: no plugin re-registered within the grace period", resource)
        del self._resources[resource]
        self._checkpointed.discard(resource)
        self._retired.add(resource)
        self._on_change()


def _status(entry: _Resource) -> ResourceStatus:
    healthy = entry.devices.healthy_ids
    return ResourceStatus(
        capacity=len(entry.devices.devices),
        allocatable=len(healthy),
        healthy_ids=healthy,
        unhealthy_ids=entry.devices.unhealthy_ids,
        registered=not entry.plugin.stopped,
    )


_UNPLACED = {healthy: DeviceInfo(healthy) for healthy in (True, False)}
"""DeviceInfo is immutable: devices without a NUMA placement (most) share one of these."""


def _device_table(listed: Iterable[Device]) -> dict[str, DeviceInfo]:
    """A ListAndWatch list as the kubelet keeps it."""
    table = {}
    for device in listed:
        healthy = device.health == HEALTHY
        if device.HasField("topology"):
            table[device.ID] = DeviceInfo(healthy, tuple(n.ID for n in device.topology.nodes))
        else:
            table[device.ID] = _UNPLACED[healthy]
    return table
