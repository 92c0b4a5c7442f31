"""udev's pure parts: the rule grammar, matching against fake sysfs devices, grouping, details."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import pytest

from akri.discovery.model import Device, DeviceSpec, InvalidDetails
from akri.discovery_handlers.udev.devices import Found, details_of, devices, groups
from akri.discovery_handlers.udev.rules import Match, RuleError, glob_matches, parse_rule


@dataclass
class FakeNode:
    devpath: str
    kernel: str = ""
    subsystem: str | None = None
    driver: str | None = None
    tags: Collection[str] = ()
    parent: FakeNode | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)

    def attribute(self, name: str) -> str | None:
        return self.attributes.get(name)

    def env(self, name: str) -> str | None:
        return self.properties.get(name)


USB = FakeNode(
    "/devices/pci0/usb1/1-1",
    kernel="1-1",
    subsystem="usb",
    driver="usb",
    tags=("seat",),
    attributes={"idVendor": "046d", "idProduct": "0825"},
)
INTERFACE = FakeNode("/devices/pci0/usb1/1-1/1-1:1.0", "1-1:1.0", "usb", "uvcvideo", parent=USB)
VIDEO = FakeNode(
    "/devices/pci0/usb1/1-1/1-1:1.0/video4linux/video0",
    kernel="video0",
    subsystem="video4linux",
    tags=("uaccess", "systemd"),
    parent=INTERFACE,
    attributes={"name": "HD Webcam\n", "index": "0"},
    properties={"ID_V4L_CAPABILITIES": ":capture:", "DEVNAME": "/dev/video0"},
)


@pytest.mark.parametrize(
    ("rule", "matches"),
    [
        ('KERNEL=="video0"', True),
        ('KERNEL=="video1"', False),
        ('KERNEL!="video1"', True),
        ('KERNEL=="video[0-9]*"', True),
        ('KERNEL=="vid?o0"', True),
        ('KERNEL=="video[!0]"', False),
        ('KERNEL=="video[^0]"', False),
        ('KERNEL=="audio*|video*"', True),
        ('KERNEL=="VIDEO0"', False),
        ('SUBSYSTEM=="video4linux"', True),
        ('SUBSYSTEM=="usb"', False),
        ('DEVPATH=="/devices/pci0/*/video0"', True),
        ('DRIVER=="uvcvideo"', False),
        ('DRIVER==""', True),
        ('DRIVERS=="uvcvideo"', True),
        ('DRIVERS=="nope"', False),
        ('KERNELS=="1-1"', True),
        ('SUBSYSTEMS=="usb"', True),
        ('SUBSYSTEMS=="pci"', False),
        ('ATTR{name}=="HD Webcam"', True),
        ('ATTR{name}=="HD*"', True),
        ('ATTR{missing}==""', True),
        ('ATTR{missing}!="x"', True),
        ('ATTR{idVendor}=="046d"', False),
        ('ATTRS{idVendor}=="046d"', True),
        ('ATTRS{idVendor}=="1234"', False),
        ('ENV{ID_V4L_CAPABILITIES}=="*:capture:*"', True),
        ('ENV{ID_V4L_CAPABILITIES}!="*:capture:*"', False),
        ('ENV{MISSING}=="?*"', False),
        ('TAG=="uaccess"', True),
        ('TAG=="seat"', False),
        ('TAG!="seat"', True),
        ('TAGS=="seat"', True),
        ('SUBSYSTEM=="video4linux", ATTRS{idVendor}=="046d", ATTRS{idProduct}=="0825"', True),
        ('SUBSYSTEM=="video4linux", ATTRS{idVendor}=="046d", ATTRS{idProduct}=="9999"', False),
        # every parent key must hold on one device: the vendor is on 1-1, the driver on 1-1:1.0
        ('ATTRS{idVendor}=="046d", DRIVERS=="uvcvideo"', False),
        ('ATTRS{idVendor}=="046d", DRIVERS=="usb"', True),
        ('KERNEL == "video0" ,SUBSYSTEM=="video4linux"', True),
        (r'ATTR{name}=="HD\ Webcam"', True),
    ],
)
def test_rule_matching(rule: str, matches: bool) -> None:
    assert parse_rule(rule).matches_node(VIDEO) is matches


def test_parse_rule_keeps_every_term() -> None:
    rule = parse_rule(r'ATTRS{serial}!="a\"b", KERNEL=="x"')
    assert rule.matches == (
        Match("ATTRS", "serial", "!=", 'a"b'),
        Match("KERNEL", None, "==", "x"),
    )
    assert rule.text == r'ATTRS{serial}!="a\"b", KERNEL=="x"'


@pytest.mark.parametrize(
    ("rule", "reason"),
    [
        ("", "at least one match key"),
        ("   ", "at least one match key"),
        ('NAME=="x"', "unsupported udev key NAME"),
        ('RUN+="/bin/true"', "unsupported udev key RUN"),
        ('ACTION=="add"', "unsupported udev key ACTION"),
        ('SYMLINK+="cam"', "unsupported udev key SYMLINK"),
        ('KERNEL="video0"', "KERNEL= is an assignment"),
        ('KERNEL+="video0"', r"KERNEL\+= is an assignment"),
        ('ENV{X}:="1"', "ENV:= is an assignment"),
        ('ATTR=="x"', r"ATTR is written ATTR\{name\}"),
        ('KERNEL{x}=="x"', "KERNEL is written KERNEL"),
        ('ENV{}=="x"', "needs a name in the braces"),
        ("KERNEL==video0", "at column 1"),
        ('KERNEL=="video0" SUBSYSTEM=="x"', "expected ',' at column 18"),
        ('KERNEL=="video0",', "at column 18"),
        ('kernel=="video0"', "unsupported udev key kernel"),
    ],
)
def test_unsupported_rules_are_refused(rule: str, reason: str) -> None:
    with pytest.raises(RuleError, match=reason):
        parse_rule(rule)


@pytest.mark.parametrize(
    ("pattern", "value", "matches"),
    [
        ("", "", True),
        ("", "x", False),
        ("*", "", True),
        ("a|b", "b", True),
        ("a|b", "ab", False),
        ("[a-c]x", "bx", True),
        ("[^a-c]x", "dx", True),
        ("*/x", "a/b/x", True),
    ],
)
def test_globs(pattern: str, value: str, matches: bool) -> None:
    assert glob_matches(pattern, value) is matches


def test_details_defaults_and_permissions() -> None:
    details = details_of("udevRules: ['KERNEL==\"video0\"']")
    assert details.group_recursive is False
    assert details.permissions == "rwm"
    assert [r.text for r in details.rules] == ['KERNEL=="video0"']
    assert details_of("udevRules: ['KERNEL==\"a\"']\npermissions: mr").permissions == "rm"
    assert details_of("udevRules: ['KERNEL==\"a\"']\ngroupRecursive: true").group_recursive


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        ("", "udevRules: Field required"),
        ("[]", "must be a mapping"),
        ("udevRules: [", "not valid YAML"),
        ("udevRules: []", "udevRules: List should have at least 1 item"),
        ("udevRules: [7]", "udevRules.0: Value error, a udev rule must be a string"),
        ("udevRules: ['NAME=\"x\"']", "udevRules.0: Value error, unsupported udev key NAME"),
        ("udevRules: ['KERNEL=\"x\"']", "udevRules.0: Value error, KERNEL= is an assignment"),
        ("udevRules: ['KERNEL==\"x\"']\npermissions: rx", "permissions: Value error"),
        ("udevRules: ['KERNEL==\"x\"']\npermissions: ''", "permissions: Value error"),
        ("udevRules: ['KERNEL==\"x\"']\npermissions: rwr", "each at most once"),
        ("udevRules: ['KERNEL==\"x\"']\ngroupRecursive: 'yes'", "groupRecursive: Input should"),
        ("udevRules: ['KERNEL==\"x\"']\nextra: 1", "extra: Extra inputs are not permitted"),
    ],
)
def test_bad_details(details: str, reason: str) -> None:
    with pytest.raises(InvalidDetails, match=reason):
        details_of(details)


def test_groups_join_the_topmost_matched_ancestor() -> None:
    found = [
        Found("/d/usb1/1-1/1-1:1.0/video0", "/dev/video0"),
        Found("/d/usb1/1-1", "/dev/bus/usb/001/002"),
        Found("/d/usb1/1-1/1-1:1.0/video1", "/dev/video1"),
        Found("/d/usb1/1-10", "/dev/bus/usb/001/010"),
        Found("/d/usb1/1-1/1-1:1.0", None),
    ]
    assert groups(found, recursive=True) == {
        "/d/usb1/1-1": sorted(set(found) - {found[3]}),
        "/d/usb1/1-10": [found[3]],
    }
    assert list(groups(found, recursive=False)) == sorted(f.devpath for f in found)


def test_ungrouped_devices() -> None:
    details = details_of("udevRules: ['KERNEL==\"x\"']\npermissions: r")
    assert devices([Found("/d/b", "/dev/b"), Found("/d/a")], details) == [
        Device("/d/a", {"UDEV_DEVPATH": "/d/a"}),
        Device(
            "/d/b",
            {"UDEV_DEVPATH": "/d/b", "UDEV_DEVNODE": "/dev/b"},
            device_specs=(DeviceSpec("/dev/b", "/dev/b", "r"),),
        ),
    ]


def test_grouped_devices_number_their_nodes() -> None:
    details = details_of("udevRules: ['KERNEL==\"x\"']\ngroupRecursive: true")
    found = [Found("/d/p/c2", "/dev/c2"), Found("/d/p", None), Found("/d/p/c1", "/dev/c1")]
    assert devices(found, details) == [
        Device(
            "/d/p",
            {"UDEV_DEVPATH": "/d/p", "UDEV_DEVNODE_0": "/dev/c1", "UDEV_DEVNODE_1": "/dev/c2"},
            device_specs=(
                DeviceSpec("/dev/c1", "/dev/c1", "rwm"),
                DeviceSpec("/dev/c2", "/dev/c2", "rwm"),
            ),
        )
    ]
