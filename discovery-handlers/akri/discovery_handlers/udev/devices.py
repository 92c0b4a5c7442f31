"""Pure: udev discoveryDetails, and the device list the matched sysfs devices make.

Without grouping every matched device is one Device. With `groupRecursive`, a matched device
below another matched device joins the topmost one, so a USB camera and its video nodes reach
one broker: the group's id is that ancestor's devpath and its nodes are numbered
`UDEV_DEVNODE_<i>` in devpath order.

Two discoveryProperties add Akri's resource properties for brokers that pass devices on (to a
VM, to libusb): `devicePluginResourceName` adds `USB_RESOURCE_<NAME>=<bus>:<device>` per USB
device node and, for a PCI device, `PCI_RESOURCE_<NAME>=<PCI address>`; `vfioPassthrough:
"true"` then adds that PCI device's `/dev/vfio/<IOMMU group>` and `/dev/vfio/vfio`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator

from akri.discovery.details import parse_details
from akri.discovery.model import Device, DeviceSpec
from akri.discovery_handlers.udev.rules import Rule, parse_rule

NAME = "udev"
DEVNODE = "UDEV_DEVNODE"
DEVPATH = "UDEV_DEVPATH"
EXAMPLE = 'udevRules: [KERNEL=="video[0-9]*"]'
RESOURCE_NAME_PROPERTY = "devicePluginResourceName"
VFIO_PASSTHROUGH_PROPERTY = "vfioPassthrough"
USB_RESOURCE = "USB_RESOURCE"
PCI_RESOURCE = "PCI_RESOURCE"
VFIO_DEVICE = "/dev/vfio/vfio"
VFIO_PERMISSIONS = "rw"
MAX_RESOURCE_NAME_CHARS = 317
"""A Kubernetes extended resource name: a DNS subdomain prefix (253), `/`, a name (63)."""
_USB_NODE = re.compile(r"^/dev/bus/usb/(\d{1,9})/(\d{1,9})$")
_PCI_ADDRESS = re.compile(r"^[0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.[0-9A-Fa-f]+$")
_IOMMU_GROUP = re.compile(r"^\d{1,9}$")
_PERMISSIONS = re.compile(r"^(?!.*(.).*\1)[rwm]{1,3}$")


def _permissions(value: str) -> str:
    """Any non-empty set of r, w, m (device cgroup access), written in r-w-m order."""
    if not _PERMISSIONS.match(value):
        raise ValueError(f"permissions must combine r, w and m, each at most once, got {value!r}")
    return "".join(letter for letter in "rwm" if letter in value)


def _rule(value: object) -> Rule:
    if not isinstance(value, str):
        raise ValueError("a udev rule must be a string")
    return parse_rule(value)


class Details(BaseModel):
    """`discoveryDetails` of a udev Configuration; rules are parsed here, refused here."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    rules: list[Annotated[Rule, PlainValidator(_rule)]] = Field(alias="udevRules", min_length=1)
    group_recursive: bool = Field(default=False, alias="groupRecursive")
    permissions: Annotated[str, AfterValidator(_permissions)] = "rwm"

    def unconfined_rule(self, allowed: frozenset[str]) -> str | None:
        """The first rule that may match a device outside the `allowed` subsystems: one
        without a `SUBSYSTEM=="a|b"` match whose every alternative is allowed (details that
        are `akri.discovery.entry_points.SubsystemRules`, for the admission webhook)."""
        for rule in self.rules:
            confined = any(
                match.key == "SUBSYSTEM"
                and match.op == "=="
                and all(part in allowed for part in match.pattern.split("|"))
                for match in rule.matches
            )
            if not confined:
                return rule.text
        return None


def details_of(details: str) -> Details:
    return parse_details(NAME, details, Details, EXAMPLE)


@dataclass(frozen=True, order=True)
class Found:
    """A matched sysfs device."""

    devpath: str
    devnode: str | None = None
    iommu_group: str | None = None
    """The name of the IOMMU group the device is in (PCI devices on an IOMMU), when known."""


@dataclass(frozen=True)
class Resources:
    """What the discoveryProperties ask for beyond Akri's UDEV_ properties."""

    name: str | None = None
    vfio_passthrough: bool = False


def resources_of(properties: Mapping[str, bytes]) -> Resources:
    """Akri reads a resource name that is UTF-8 and `vfioPassthrough` "true" in any case;
    a name too long to be a resource name is ignored too rather than made an env var name."""
    try:
        name = properties[RESOURCE_NAME_PROPERTY].decode() or None
    except (KeyError, UnicodeDecodeError):
        name = None
    if name is not None and len(name) > MAX_RESOURCE_NAME_CHARS:
        name = None
    vfio = properties.get(VFIO_PASSTHROUGH_PROPERTY, b"").strip().lower() == b"true"
    return Resources(name, vfio)


def resource_variable(prefix: str, name: str) -> str:
    """Akri's name: the resource name upper-cased, `.` and `/` made `_` (`akri.sh/udev-cam`
    is `<prefix>_AKRI_SH_UDEV-CAM`)."""
    return f"{prefix}_{name.upper().replace('.', '_').replace('/', '_')}"


def usb_address(devnode: str) -> str | None:
    """`<bus>:<device>` of a USB device node `/dev/bus/usb/BBB/DDD`, without leading zeros."""
    match = _USB_NODE.match(devnode)
    return f"{int(match[1])}:{int(match[2])}" if match else None


def pci_address(devpath: str) -> str | None:
    """The PCI address of a device that is not on a USB bus: the last `dddd:bb:ss.f` part."""
    parts = devpath.split("/")
    if any(part.startswith("usb") for part in parts):
        return None
    return next((part for part in reversed(parts) if _PCI_ADDRESS.match(part)), None)


def _resource_properties(
    devpath: str, nodes: list[str], suffixes: list[str], resources: Resources
) -> dict[str, str]:
    if resources.name is None:
        return {}
    result = {}
    for node, suffix in zip(nodes, suffixes, strict=True):
        if (address := usb_address(node)) is not None:
            result[resource_variable(USB_RESOURCE, resources.name) + suffix] = address
    if (pci := pci_address(devpath)) is not None:
        result[resource_variable(PCI_RESOURCE, resources.name)] = pci
    return result


def _vfio_specs(top: Found, resources: Resources) -> tuple[DeviceSpec, ...]:
    """The VFIO group of a PCI device and the VFIO container, for passthrough to a VM."""
    group = top.iommu_group
    if not (resources.vfio_passthrough and resources.name and pci_address(top.devpath)):
        return ()
    if group is None or not _IOMMU_GROUP.match(group):
        return ()
    return tuple(
        DeviceSpec(path, path, VFIO_PERMISSIONS) for path in (f"/dev/vfio/{group}", VFIO_DEVICE)
    )


def groups(found: Iterable[Found], recursive: bool) -> dict[str, list[Found]]:
    """Top devpath -> its members in devpath order (each device alone unless `recursive`)."""
    result: dict[str, list[Found]] = {}
    for device in sorted(set(found)):
        top = next((t for t in result if recursive and _is_below(device.devpath, t)), None)
        result.setdefault(top or device.devpath, []).append(device)
    return result


def _is_below(devpath: str, ancestor: str) -> bool:
    return devpath.startswith(ancestor.rstrip("/") + "/")


def devices(
    found: Iterable[Found], details: Details, resources: Resources | None = None
) -> list[Device]:
    """The Devices for the matched sysfs devices, by devpath."""
    resources = resources or Resources()
    result = []
    for devpath, members in groups(found, details.group_recursive).items():
        nodes = [m.devnode for m in members if m.devnode]
        # ungrouped: one member, its node unnumbered
        suffixes = [f"_{i}" for i in range(len(nodes))] if details.group_recursive else [""]
        named = {DEVNODE + suffix: node for node, suffix in zip(nodes, suffixes, strict=False)}
        extra = _resource_properties(devpath, nodes, suffixes[: len(nodes)], resources)
        specs = tuple(DeviceSpec(node, node, details.permissions) for node in nodes)
        specs += _vfio_specs(members[0], resources)
        result.append(Device(devpath, {DEVPATH: devpath, **named, **extra}, device_specs=specs))
    return result
