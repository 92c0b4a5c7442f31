"""The node's device store: what discovery reported, what the plugins read, and the wait for a
device not reported yet (issue 25)."""

from __future__ import annotations

import asyncio

import pytest

from akri.agent.devices import DeviceStore, NotDiscovered
from akri.discovery.model import Device, DeviceSpec, Mount

LONG_S = 30.0  # never reached when the code is right; only a hang gets near it
CAM = Device(
    "cam", mounts=(Mount("/data", "/host/data"),), device_specs=(DeviceSpec("/dev/v0", "/dev/v0"),)
)
ECHO = Device("echo")  # debugEcho: nothing but properties


def paths(store: DeviceStore, instance: str) -> tuple[list[str], list[str]] | None:
    extras = store.extras(instance)
    if extras is None:
        return None
    mounts, specs = extras
    return [m.host_path for m in mounts], [s.host_path for s in specs]


def test_a_device_reported_without_extras_is_known_and_an_unreported_one_is_not() -> None:
    store = DeviceStore()
    store.report("cfg", {"cfg-echo": ECHO, "cfg-cam": CAM})

    assert paths(store, "cfg-echo") == ([], [])
    assert paths(store, "cfg-cam") == (["/host/data"], ["/dev/v0"])
    assert paths(store, "cfg-other") is None


def test_a_device_no_longer_reported_is_forgotten_and_a_changed_one_follows() -> None:
    store = DeviceStore()
    store.report("cfg", {"cfg-echo": ECHO, "cfg-cam": CAM})
    moved = Device("cam", device_specs=(DeviceSpec("/dev/v1", "/dev/v1"),))

    store.report("cfg", {"cfg-cam": moved})

    assert paths(store, "cfg-echo") is None
    assert paths(store, "cfg-cam") == ([], ["/dev/v1"])
    assert store.instances() == {"cfg-cam"}
    store.report("cfg", {})
    assert paths(store, "cfg-cam") is None
    assert store.instances() == frozenset()


def test_an_earlier_writer_withdrawing_leaves_the_device_a_later_one_reports() -> None:
    """A Configuration deleted and created again: the new runner may publish before the old
    one has left its Instances (same names)."""
    store = DeviceStore()
    store.report("old", {"cfg-cam": CAM})
    store.report("new", {"cfg-cam": CAM})

    store.report("old", {})

    assert paths(store, "cfg-cam") == (["/host/data"], ["/dev/v0"])
    store.report("new", {})
    assert paths(store, "cfg-cam") is None


async def test_wait_returns_known_devices_at_once() -> None:
    store = DeviceStore()
    store.report("cfg", {"cfg-echo": ECHO})

    found = await store.wait(["cfg-echo"], 0)

    assert found == {"cfg-echo": ([], [])}


async def test_waiters_are_woken_by_the_report_of_their_devices() -> None:
    store = DeviceStore()
    waiters = [
        asyncio.create_task(store.wait(["cfg-cam"], LONG_S)),
        asyncio.create_task(store.wait(["cfg-cam", "cfg-echo"], LONG_S)),
        asyncio.create_task(store.wait(["cfg-echo"], LONG_S)),
    ]
    await asyncio.sleep(0)  # one loop turn: each task runs up to its wait (no timing involved)
    assert not any(w.done() for w in waiters)

    store.report("a", {"cfg-cam": CAM})
    store.report("b", {"cfg-echo": ECHO})

    results = await asyncio.gather(*waiters)
    assert [sorted(r) for r in results] == [["cfg-cam"], ["cfg-cam", "cfg-echo"], ["cfg-echo"]]
    assert [m.host_path for m in results[1]["cfg-cam"][0]] == ["/host/data"]


async def test_a_device_never_reported_fails_naming_only_it() -> None:
    store = DeviceStore()
    store.report("cfg", {"cfg-echo": ECHO})

    with pytest.raises(NotDiscovered) as refused:
        await store.wait(["cfg-echo", "cfg-cam"], 0.01)

    assert refused.value.instances == ["cfg-cam"]
    assert "Instance cfg-cam has not been discovered on this node" in str(refused.value)
