"""Pure: udev discoveryDetails, and the device list the matched sysfs devices make.

Without grouping every matched device is one Device. With `groupRecursive`, a matched device
below another matched device joins the topmost one, so a USB camera and its video nodes reach
one broker: the group's id is that ancestor's devpath and its nodes are numbered
`UDEV_DEVNODE_<i>` in devpath order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator

from akri.agent.discovery.model import Device, DeviceSpec
from akri.discovery_handlers.details import parse_details
from akri.discovery_handlers.udev.rules import Rule, parse_rule

NAME = "udev"
DEVNODE = "UDEV_DEVNODE"
DEVPATH = "UDEV_DEVPATH"
EXAMPLE = 'udevRules: [KERNEL=="video[0-9]*"]'
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


def details_of(details: str) -> Details:
    return parse_details(NAME, details, Details, EXAMPLE)


@dataclass(frozen=True, order=True)
class Found:
    """A matched sysfs device."""

    devpath: str
    devnode: str | None = None


def groups(found: Iterable[Found], recursive: bool) -> dict[str, list[Found]]:
    """Top devpath -> its members in devpath order (each device alone unless `recursive`)."""
    result: dict[str, list[Found]] = {}
    for device in sorted(set(found)):
        top = next((t for t in result if recursive and _is_below(device.devpath, t)), None)
        result.setdefault(top or device.devpath, []).append(device)
    return result


def _is_below(devpath: str, ancestor: str) -> bool:
    return devpath.startswith(ancestor.rstrip("/") + "/")


def devices(found: Iterable[Found], details: Details) -> list[Device]:
    """The Devices for the matched sysfs devices, by devpath."""
    result = []
    for devpath, members in groups(found, details.group_recursive).items():
        nodes = [m.devnode for m in members if m.devnode]
        if details.group_recursive:
            named = {f"{DEVNODE}_{i}": node for i, node in enumerate(nodes)}
        else:
            named = {DEVNODE: nodes[0]} if nodes else {}  # ungrouped: one member
        specs = tuple(DeviceSpec(node, node, details.permissions) for node in nodes)
        result.append(Device(devpath, {DEVPATH: devpath, **named}, device_specs=specs))
    return result
