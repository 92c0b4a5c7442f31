"""A umockdev testbed through ctypes: fake sysfs devices and uevents for the real pyudev.

Works only in a process started by `umockdev-wrapper` (it preloads the library that redirects
/sys, /dev and the udev netlink socket). Whether that is the case is read from LD_PRELOAD:
`umockdev_in_mock_environment()` would remember a False answer given before any testbed exists.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

import pytest

PRELOAD = "libumockdev-preload"

under_wrapper = pytest.mark.skipif(
    PRELOAD not in os.environ.get("LD_PRELOAD", ""),
    reason="needs fake devices: run under umockdev-wrapper (Debian package umockdev), "
    "as `make pytest` does",
)


def _strings(pairs: Mapping[str, str]) -> ctypes.Array[ctypes.c_char_p]:
    """A NULL-terminated key, value, key, value, ... array."""
    flat = [item.encode() for pair in pairs.items() for item in pair]
    return (ctypes.c_char_p * (len(flat) + 1))(*flat, None)


class Testbed:
    __test__ = False  # not a test class, whatever its name
    """One umockdev testbed; `remove_all` removes every device still there.

    A testbed keeps a socket open even after it is freed, and so does every later udev monitor
    once `umockdev_testbed_clear` ran: tests share one testbed per module (created before the
    per-test leak check looks) and remove their devices one by one.
    """

    def __init__(self) -> None:
        self._lib = ctypes.CDLL("libumockdev.so.0")
        self._gobject = ctypes.CDLL("libgobject-2.0.so.0")
        lib = self._lib
        lib.umockdev_testbed_new.restype = ctypes.c_void_p
        lib.umockdev_testbed_add_devicev.restype = ctypes.c_char_p
        lib.umockdev_testbed_add_devicev.argtypes = (
            [ctypes.c_void_p] + [ctypes.c_char_p] * 3 + [ctypes.POINTER(ctypes.c_char_p)] * 2
        )
        lib.umockdev_testbed_uevent.argtypes = [ctypes.c_void_p] + [ctypes.c_char_p] * 2
        lib.umockdev_testbed_remove_device.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        lib.umockdev_testbed_set_attribute.argtypes = [ctypes.c_void_p] + [ctypes.c_char_p] * 3
        lib.umockdev_testbed_set_attribute_link.argtypes = [ctypes.c_void_p] + [ctypes.c_char_p] * 3
        self._gobject.g_object_unref.argtypes = [ctypes.c_void_p]
        self._testbed = lib.umockdev_testbed_new()
        self._added: list[str] = []

    def add(
        self,
        subsystem: str,
        name: str,
        parent: str | None = None,
        attributes: Mapping[str, str] | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> str:
        """Add a device (which emits "add") and return its /sys path."""
        syspath = self._lib.umockdev_testbed_add_devicev(
            self._testbed,
            subsystem.encode(),
            name.encode(),
            parent.encode() if parent else None,
            _strings(attributes or {}),
            _strings(properties or {}),
        )
        assert syspath, f"umockdev refused device {name}"
        self._added.append(syspath.decode())
        return self._added[-1]

    def remove(self, syspath: str) -> None:
        """Emit "remove" (umockdev's remove alone is silent), then remove the device."""
        self._lib.umockdev_testbed_uevent(self._testbed, syspath.encode(), b"remove")
        self._lib.umockdev_testbed_remove_device(self._testbed, syspath.encode())
        self._added.remove(syspath)

    def change_attribute(self, syspath: str, name: str, value: str) -> None:
        """Write a sysfs attribute and emit "change", as a driver would."""
        self._lib.umockdev_testbed_set_attribute(
            self._testbed, syspath.encode(), name.encode(), value.encode()
        )
        self._lib.umockdev_testbed_uevent(self._testbed, syspath.encode(), b"change")

    def link_attribute(self, syspath: str, name: str, target: str) -> None:
        """Make the sysfs attribute `name` a symlink to `target` (like `iommu_group`)."""
        self._lib.umockdev_testbed_set_attribute_link(
            self._testbed, syspath.encode(), name.encode(), target.encode()
        )

    def remove_all(self) -> None:
        """Children before their parents: the reverse order of adding."""
        for syspath in reversed(self._added.copy()):
            self.remove(syspath)

    def close(self) -> None:
        self._gobject.g_object_unref(self._testbed)
