"""The udev handler's I/O: enumerate sysfs once, then follow the udev netlink monitor.

The monitor starts before the enumeration so no event falls between the two. Its socket is
non-blocking: the event loop watches it with `add_reader` and drains it without waiting, while
enumeration and rule matching (sysfs reads) run in a worker thread, never on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncGenerator, Collection, Iterable, Mapping

import pyudev

from akri.discovery.model import Device, HandlerUnavailable
from akri.discovery_handlers.udev.devices import NAME, Found, details_of, devices, resources_of
from akri.discovery_handlers.udev.rules import Rule, matches_any

log = logging.getLogger(__name__)


class SysfsNode:
    """A pyudev device seen through the rules' `Node` protocol."""

    def __init__(self, device: pyudev.Device) -> None:
        self._device = device

    @property
    def devpath(self) -> str:
        return str(self._device.device_path)

    @property
    def kernel(self) -> str:
        return str(self._device.sys_name)

    @property
    def subsystem(self) -> str | None:
        return _text(self._device.subsystem)

    @property
    def driver(self) -> str | None:
        return _text(self._device.driver)

    @property
    def tags(self) -> Collection[str]:
        return [str(tag) for tag in self._device.tags]

    @property
    def parent(self) -> SysfsNode | None:
        parent = self._device.parent
        return SysfsNode(parent) if parent is not None else None

    def attribute(self, name: str) -> str | None:
        value = self._device.attributes.get(name)
        return value.decode(errors="replace") if value is not None else None

    def env(self, name: str) -> str | None:
        return _text(self._device.properties.get(name))


def _text(value: object) -> str | None:
    return str(value) if value is not None else None


def iommu_group(device: pyudev.Device) -> str | None:
    """The name of the IOMMU group `iommu_group` links to, for devices on an IOMMU."""
    try:
        return os.path.basename(os.readlink(os.path.join(device.sys_path, "iommu_group")))
    except OSError:
        return None


def found_if_matching(device: pyudev.Device, rules: Collection[Rule]) -> Found | None:
    if not matches_any(rules, SysfsNode(device)):
        return None
    return Found(str(device.device_path), _text(device.device_node), iommu_group(device))


def scan(context: pyudev.Context, rules: Collection[Rule]) -> dict[str, Found]:
    """Every matching device present now, by devpath (blocking: sysfs reads)."""
    matching = (found_if_matching(device, rules) for device in context.list_devices())
    return {found.devpath: found for found in matching if found is not None}


def apply(
    events: Iterable[pyudev.Device], rules: Collection[Rule], found: dict[str, Found]
) -> None:
    """Update `found` for monitor events (blocking: sysfs reads of added devices)."""
    for event in events:
        devpath = str(event.device_path)
        if event.action == "move":
            found.pop(str(event.properties.get("DEVPATH_OLD", "")), None)
        if event.action == "remove":
            found.pop(devpath, None)
            continue
        match = found_if_matching(event, rules)
        if match is None:
            found.pop(devpath, None)
        else:
            found[devpath] = match


class Udev:
    """The udev handler; devices are local to the node (shared is False)."""

    name = NAME
    shared = False

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        parsed = details_of(details)
        resources = resources_of(properties)
        context = pyudev.Context()
        try:
            monitor = pyudev.Monitor.from_netlink(context)
            monitor.start()
        except OSError as error:
            raise HandlerUnavailable(f"cannot listen to udev events: {error}") from None
        pending: list[pyudev.Device] = []
        readable = asyncio.Event()

        def drain() -> None:
            while (event := monitor.poll(timeout=0)) is not None:
                pending.append(event)
            readable.set()

        found = await asyncio.to_thread(scan, context, parsed.rules)
        sent = devices(found.values(), parsed, resources)
        yield sent
        loop = asyncio.get_running_loop()
        loop.add_reader(monitor.fileno(), drain)
        try:
            while True:
                await readable.wait()
                readable.clear()
                events = pending.copy()
                pending.clear()
                await asyncio.to_thread(apply, events, parsed.rules, found)
                current = devices(found.values(), parsed, resources)
                if current != sent:
                    log.debug("udev devices now %s", [d.id for d in current])
                    yield current
                    sent = current
        finally:
            loop.remove_reader(monitor.fileno())


def from_environment(shared: bool | None, environ: Mapping[str, str]) -> Udev:
    """`akri-discovery-handler udev`; devices behind udev are always local to their node."""
    if shared:
        raise ValueError("udev devices are local to their node; --shared is not supported")
    return Udev()
