"""One resource's devices as its plugin last reported them (pure bookkeeping, no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class DeviceInfo:
    """What the kubelet keeps of a `Device`: its health and NUMA placement."""

    healthy: bool
    numa_nodes: tuple[int, ...] = ()


@dataclass
class ResourceDevices:
    """The device table of one resource: capacity counts every device, allocatable the healthy."""

    devices: dict[str, DeviceInfo] = field(default_factory=dict)

    def replace(self, devices: Mapping[str, DeviceInfo]) -> bool:
        """Adopt a full ListAndWatch list (devices missing from it are gone); True if changed."""
        if dict(devices) == self.devices:
            return False
        self.devices = dict(devices)
        return True

    def mark_unhealthy(self) -> bool:
        """What the kubelet does when the plugin's stream ends; True if anything changed."""
        if not self.healthy_ids:
            return False
        self.devices = {
            device_id: DeviceInfo(healthy=False, numa_nodes=info.numa_nodes)
            for device_id, info in self.devices.items()
        }
        return True

    @property
    def healthy_ids(self) -> frozenset[str]:
        return frozenset(i for i, info in self.devices.items() if info.healthy)

    @property
    def unhealthy_ids(self) -> frozenset[str]:
        return frozenset(i for i, info in self.devices.items() if not info.healthy)

    def numa_nodes(self, device_id: str) -> tuple[int, ...]:
        info = self.devices.get(device_id)
        return info.numa_nodes if info is not None else ()
