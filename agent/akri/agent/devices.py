"""The one source on a node of what a device needs besides its properties: mounts and device
nodes, by Instance name.

Properties travel in the Instance; mounts and device nodes are host paths and stay on the node
that discovered them. Discovery writes them here as it publishes; the device plugins and the
DRA plugin read them when they hand a device out. After an agent restart the Instances are
back (from the API) before discovery has reported again: a device not reported yet is waited
for, briefly, and otherwise refused, so no container ever starts without its device nodes.
A device reported with no mounts and no device nodes (debugEcho) is known, with nothing to add.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Hashable, Mapping

from akri.agent.extras import Extras, device_extras
from akri.discovery.model import Device


class NotDiscovered(Exception):
    """Devices whose mounts and device nodes are not known on this node: refused, not handed
    out without them."""

    def __init__(self, instances: Collection[str], waited: float) -> None:
        self.instances = sorted(instances)
        super().__init__(
            f"the device of Instance {', '.join(self.instances)} has not been discovered on "
            f"this node (waited {waited:g}s for discovery), so its device nodes and mounts are "
            "unknown; the pod can be retried"
        )


class DeviceStore:
    """Each device's extras as its discoverer last reported them; one writer per discoverer
    (a Configuration's publisher), any number of readers. When two writers report one Instance
    (a Configuration deleted and created again) the later one wins and the earlier one's
    withdrawal leaves it alone."""

    def __init__(self) -> None:
        self._by_writer: dict[Hashable, frozenset[str]] = {}
        self._known: dict[str, tuple[Hashable, Device, Extras]] = {}
        self._changed = asyncio.Event()

    def report(self, writer: Hashable, devices: Mapping[str, Device]) -> None:
        """`writer` now discovers exactly `devices` (by Instance name); an empty mapping
        withdraws all it reported."""
        for name in self._by_writer.pop(writer, frozenset()) - devices.keys():
            if (known := self._known.get(name)) is not None and known[0] == writer:
                del self._known[name]
        if devices:
            self._by_writer[writer] = frozenset(devices)
        added = False
        for name, device in devices.items():
            known = self._known.get(name)
            if known is None or known[1] != device:  # converted once per change, not per read
                self._known[name] = (writer, device, device_extras(device))
                added = added or known is None
            elif known[0] != writer:
                self._known[name] = (writer, *known[1:])
        if added:  # wake the waiters, and give later ones a fresh event
            self._changed.set()
            self._changed = asyncio.Event()

    def instances(self) -> frozenset[str]:
        """The Instances of every device discovery reports on this node now."""
        return frozenset(self._known)

    def extras(self, instance: str) -> Extras | None:
        """The device's mounts and device nodes; None when discovery has not reported it."""
        known = self._known.get(instance)
        return None if known is None else known[2]

    async def wait(self, instances: Collection[str], seconds: float) -> dict[str, Extras]:
        """The extras of every one of `instances`, waiting up to `seconds` for discovery to
        report those not known yet; raises NotDiscovered naming the others."""
        missing = [name for name in instances if name not in self._known]
        if missing:  # only just after a start: the usual Allocate sets no timer
            try:
                async with asyncio.timeout(seconds):
                    while missing:
                        await self._changed.wait()
                        missing = [name for name in instances if name not in self._known]
            except TimeoutError:
                raise NotDiscovered(missing, seconds) from None
        return {name: self._known[name][2] for name in instances}
