"""Akri's udev resource properties, from device paths and discoveryProperties (pure)."""

from __future__ import annotations

import pytest

from akri.discovery_handlers.udev.devices import (
    MAX_RESOURCE_NAME_CHARS,
    Resources,
    pci_address,
    resource_variable,
    resources_of,
    usb_address,
)


@pytest.mark.parametrize(
    ("devnode", "address"),
    [
        ("/dev/bus/usb/001/010", "1:10"),
        ("/dev/bus/usb/3/127", "3:127"),
        ("/dev/bus/usb/abc/def", None),
        ("/dev/bus/usb/001/010/extra", None),
        ("/dev/video0", None),
        ("/dev/bus/usb/", None),
    ],
)
def test_usb_address(devnode: str, address: str | None) -> None:
    assert usb_address(devnode) == address


@pytest.mark.parametrize(
    ("devpath", "address"),
    [
        ("/devices/pci0000:00/0000:00:01.0/0000:01:00.0", "0000:01:00.0"),
        ("/devices/pci0000:00/0000:03:00.0", "0000:03:00.0"),
        ("/devices/pci0000:00/0000:00:14.0/usb1/1-1", None),  # a USB device below a PCI bus
        ("/devices/virtual/misc/vfio", None),
    ],
)
def test_pci_address(devpath: str, address: str | None) -> None:
    assert pci_address(devpath) == address


def test_resource_variables_are_named_as_akri_names_them() -> None:
    assert resource_variable("USB_RESOURCE", "akri.sh/udev-usb-mouse") == (
        "USB_RESOURCE_AKRI_SH_UDEV-USB-MOUSE"
    )
    assert resource_variable("PCI_RESOURCE", "vendor.io/device") == "PCI_RESOURCE_VENDOR_IO_DEVICE"


@pytest.mark.parametrize(
    ("properties", "resources"),
    [
        ({}, Resources()),
        ({"devicePluginResourceName": b"a.b/c"}, Resources("a.b/c")),
        (
            {"devicePluginResourceName": b"a/c", "vfioPassthrough": b" TRUE "},
            Resources("a/c", True),
        ),
        ({"devicePluginResourceName": b"\xff\xfe"}, Resources()),
        ({"devicePluginResourceName": b"x" * (MAX_RESOURCE_NAME_CHARS + 1)}, Resources()),
        ({"vfioPassthrough": b"yes"}, Resources()),
    ],
)
def test_resources_of_discovery_properties(
    properties: dict[str, bytes], resources: Resources
) -> None:
    assert resources_of(properties) == resources
