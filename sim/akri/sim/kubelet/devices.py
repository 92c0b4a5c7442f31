"""One resource's devices as its plugin last reported them (pure bookkeeping, no I/O)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

Table = dict[str, "DeviceInfo"]


@dataclass(frozen=True)
class DeviceInfo:
    """What the kubelet keeps of a `Device`: its health and NUMA placement."""

    healthy: bool
    numa_nodes: tuple[int, ...] = ()


class ResourceDevices:
    """The device table of one resource: capacity counts every device, allocatable the healthy.

    A plugin's list is kept as it arrived and read into the table when the table is next asked
    for (an admission, a status): a plugin sends its full list on every change, most of which
    no one reads before the next."""

    def __init__(self, devices: Mapping[str, DeviceInfo] | None = None) -> None:
        self._table: Table = dict(devices or {})
        self._unread: Callable[[], Table] | None = None
        self._received: object = None
        """The last list received as it arrived; None once the table changed otherwise."""
        self._healthy: frozenset[str] | None = None
        self._unhealthy: frozenset[str] | None = None

    def receive(self, listed: object, read: Callable[[], Table]) -> bool:
        """Adopt a full ListAndWatch list (devices missing from it are gone), which `read()`
        turns into the table; True if it differs from the last list received (a list that
        differs only in its order, say, counts as a change)."""
        if self._received is not None and listed == self._received:
            return False
        self._received, self._unread = listed, read
        self._healthy = self._unhealthy = None
        return True

    @property
    def devices(self) -> Mapping[str, DeviceInfo]:
        if self._unread is not None:
            self._table, self._unread = self._unread(), None
        return self._table

    def mark_unhealthy(self) -> bool:
        """What the kubelet does when the plugin's stream ends; True if anything changed."""
        if not self.healthy_ids:
            return False
        self._table = {
            device_id: DeviceInfo(healthy=False, numa_nodes=info.numa_nodes)
            for device_id, info in self.devices.items()
        }
        self._received = None
        self._healthy = self._unhealthy = None
        return True

    @property
    def healthy_ids(self) -> frozenset[str]:
        if self._healthy is None or self._unread is not None:
            self._healthy = frozenset(i for i, info in self.devices.items() if info.healthy)
        return self._healthy

    @property
    def unhealthy_ids(self) -> frozenset[str]:
        if self._unhealthy is None or self._unread is not None:
            self._unhealthy = frozenset(i for i, info in self.devices.items() if not info.healthy)
        return self._unhealthy

    def numa_nodes(self, device_id: str) -> tuple[int, ...]:
        info = self.devices.get(device_id)
        return info.numa_nodes if info is not None else ()
