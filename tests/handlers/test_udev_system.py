"""The udev handler on fake sysfs devices (umockdev): the real pyudev enumeration and monitor.

Every test that needs umockdev-wrapper lives in this file, which CI runs under the wrapper on
its own: the preloaded library also intercepts other sockets (gRPC's) in ways the leak checks
of unrelated tests notice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import aclosing
from pathlib import Path

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.agent.discovery.registry import HandlerRegistry
from akri.discovery.model import Device, DeviceSpec
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.udev.handler import Udev
from akri.sim.cluster import Cluster
from akri.sim.manifests import apply_documents
from tests.discovery.conftest import Recorder, SessionFactory, fast_backoff, registered
from tests.handlers.streams import next_list
from tests.handlers.test_examples import details
from tests.handlers.umockdev import Testbed, under_wrapper
from tests.support import eventually, running

pytestmark = under_wrapper

VIDEO_RULE = "udevRules: ['SUBSYSTEM==\"video4linux\"']"


def camera(bed: Testbed, name: str, vendor: str, number: int) -> tuple[str, str]:
    """A USB device with one video node below it; their /sys paths."""
    usb = bed.add(
        "usb",
        name,
        attributes={"idVendor": vendor},
        properties={"DEVNAME": f"/dev/bus/usb/001/{number:03}", "DEVTYPE": "usb_device"},
    )
    video = bed.add(
        "video4linux", f"video{number}", usb, properties={"DEVNAME": f"/dev/video{number}"}
    )
    return usb, video


def devpath(syspath: str) -> str:
    return syspath.removeprefix("/sys")


async def first_list(details: str) -> list[Device]:
    async with aclosing(Udev().discover(details, {})) as lists:
        return await next_list(lists)


async def test_only_devices_matching_a_rule(testbed: Testbed) -> None:
    _, logitech = camera(testbed, "usb1", "046d", 0)
    camera(testbed, "usb2", "1234", 1)
    testbed.add("tty", "ttyS0", properties={"DEVNAME": "/dev/ttyS0"})
    details = 'udevRules: [\'SUBSYSTEM=="video4linux", ATTRS{idVendor}=="046d"\']\npermissions: rw'
    assert await first_list(details) == [
        Device(
            devpath(logitech),
            {"UDEV_DEVPATH": devpath(logitech), "UDEV_DEVNODE": "/dev/video0"},
            device_specs=(DeviceSpec("/dev/video0", "/dev/video0", "rw"),),
        )
    ]
    assert await first_list("udevRules: ['KERNEL==\"nothing*\"']") == []


async def test_rules_add_up(testbed: Testbed) -> None:
    _, video = camera(testbed, "usb1", "046d", 0)
    tty = testbed.add("tty", "ttyS0", properties={"DEVNAME": "/dev/ttyS0"})
    details = "udevRules: ['KERNEL==\"ttyS*\"', 'SUBSYSTEM==\"video4linux\"']"
    assert sorted(d.id for d in await first_list(details)) == sorted(map(devpath, [tty, video]))


async def test_group_recursive_merges_a_device_and_its_children(testbed: Testbed) -> None:
    usb, _ = camera(testbed, "usb1", "046d", 0)
    testbed.add("video4linux", "video7", usb, properties={"DEVNAME": "/dev/video7"})
    details = (
        'udevRules: [\'SUBSYSTEM=="usb"\', \'SUBSYSTEMS=="usb", KERNEL=="video*"\']\n'
        "groupRecursive: true"
    )
    (device,) = await first_list(details)
    assert device.id == devpath(usb)
    assert device.properties == {
        "UDEV_DEVPATH": devpath(usb),
        "UDEV_DEVNODE_0": "/dev/bus/usb/001/000",
        "UDEV_DEVNODE_1": "/dev/video0",
        "UDEV_DEVNODE_2": "/dev/video7",
    }
    assert [spec.host_path for spec in device.device_specs] == [
        "/dev/bus/usb/001/000",
        "/dev/video0",
        "/dev/video7",
    ]
    ungrouped = await first_list(details.replace("true", "false"))
    assert len(ungrouped) == 3


async def test_hot_plug_reaches_the_session(
    testbed: Testbed, registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    registry.add(Udev())
    async with running(make_session("udev", VIDEO_RULE).run()):
        await recorder.until_ids()
        _, video = camera(testbed, "usb1", "046d", 0)
        await recorder.until_ids(devpath(video))
        _, second = camera(testbed, "usb2", "046d", 1)
        await recorder.until_ids(devpath(video), devpath(second))
        testbed.remove(video)
        await recorder.until_ids(devpath(second))


async def test_a_change_that_stops_matching_removes_the_device(testbed: Testbed) -> None:
    usb, video = camera(testbed, "usb1", "046d", 0)
    details = 'udevRules: [\'KERNEL=="video*", ATTRS{idVendor}=="046d"\']'
    async with aclosing(Udev().discover(details, {})) as lists:
        assert [d.id for d in await next_list(lists)] == [devpath(video)]
        testbed.change_attribute(video, "name", "unrelated")
        testbed.change_attribute(usb, "idVendor", "ffff")
        testbed.change_attribute(video, "name", "re-read")
        assert await next_list(lists) == []


async def test_the_example_configuration_finds_video_devices(testbed: Testbed) -> None:
    testbed.add("tty", "ttyS0", properties={"DEVNAME": "/dev/ttyS0"})
    video = testbed.add("video4linux", "video0", properties={"DEVNAME": "/dev/video0"})
    assert [d.id for d in await first_list(details("udev.yaml"))] == [devpath(video)]


@pytest.fixture
async def served_udev(socket_dir: Path) -> AsyncIterator[HandlerServer]:
    async with HandlerServer(Udev(), socket_dir, backoff=fast_backoff) as server:
        yield server


@pytest.mark.usefixtures("agent", "served_udev")
async def test_external_udev_handler_follows_hot_plug(
    testbed: Testbed, registry: HandlerRegistry, recorder: Recorder, make_session: SessionFactory
) -> None:
    await registered(registry, "udev")
    (handler,) = registry.handlers("udev").values()
    assert handler.shared is False
    async with running(make_session("udev", VIDEO_RULE).run()):
        await recorder.until_ids()
        _, video = camera(testbed, "usb1", "046d", 3)
        await recorder.until_ids(devpath(video))
        assert recorder.lists[-1][0].device_specs == (
            DeviceSpec("/dev/video3", "/dev/video3", "rwm"),
        )
        testbed.remove(video)
        await recorder.until_ids()


async def test_hot_plug_reaches_instances_and_the_kubelet(
    testbed: Testbed, socket_dir: Path
) -> None:
    """A camera plugged into a simulated node becomes a local Instance and a kubelet resource;
    unplugged, both go at once (local devices have no offline grace)."""
    async with Cluster(["node-0"], workdir=socket_dir / "c", agents=True) as cluster:
        node = cluster.nodes["node-0"]
        custom = client.CustomObjectsApi(cluster.api_client())
        async with HandlerServer(Udev(), node.discovery_handlers_dir, backoff=fast_backoff):
            configuration = {
                "apiVersion": naming.API_VERSION,
                "kind": "Configuration",
                "metadata": {"name": "cams", "namespace": "default"},
                "spec": {"discoveryHandler": {"name": "udev", "discoveryDetails": VIDEO_RULE}},
            }
            await apply_documents(cluster.api_client(), [configuration])
            _, video = camera(testbed, "usb1", "046d", 5)
            instance = naming.instance_name("cams", devpath(video), "node-0")
            resource = naming.resource_name(instance)

            async def listed() -> list[str]:
                found = await custom.list_namespaced_custom_object(
                    naming.GROUP, naming.VERSION, "default", "instances"
                )
                return [i["metadata"]["name"] for i in found["items"]]

            await eventually(lambda: _is(listed(), [instance]), "the camera's Instance")
            await eventually(
                lambda: (
                    node.kubelet.resources().get(resource, None) is not None
                    and node.kubelet.resources()[resource].allocatable == 1
                ),
                "the kubelet to see the camera's slot",
            )
            testbed.remove(video)
            await eventually(lambda: _is(listed(), []), "the Instance to go")
            await eventually(
                lambda: resource not in node.kubelet.registered_resources(),
                "the kubelet to lose the resource",
            )


async def _is(value: Awaitable[object], expected: object) -> bool:
    return await value == expected


RESOURCE = "akri.sh/udev-passthrough"
PCI_RULE = 'udevRules: [\'SUBSYSTEM=="pci", ATTR{vendor}=="0x10de"\']'


async def test_usb_devices_get_akri_usb_resource_properties(testbed: Testbed) -> None:
    usb, _ = camera(testbed, "usb1", "046d", 12)
    details = 'udevRules: [\'SUBSYSTEM=="usb", ATTR{idVendor}=="046d"\']'
    properties = {"devicePluginResourceName": RESOURCE.encode()}
    async with aclosing(Udev().discover(details, properties)) as lists:
        (device,) = await next_list(lists)
    assert device.properties == {
        "UDEV_DEVPATH": devpath(usb),
        "UDEV_DEVNODE": "/dev/bus/usb/001/012",
        "USB_RESOURCE_AKRI_SH_UDEV-PASSTHROUGH": "1:12",
    }
    assert await first_list(details) == [
        Device(
            devpath(usb),
            {"UDEV_DEVPATH": devpath(usb), "UDEV_DEVNODE": "/dev/bus/usb/001/012"},
            device_specs=(DeviceSpec("/dev/bus/usb/001/012", "/dev/bus/usb/001/012", "rwm"),),
        )
    ]


async def test_grouped_usb_nodes_are_numbered_like_their_devnodes(testbed: Testbed) -> None:
    usb, _ = camera(testbed, "usb1", "046d", 3)
    details = (
        'udevRules: [\'SUBSYSTEM=="usb"\', \'SUBSYSTEMS=="usb", KERNEL=="video*"\']\n'
        "groupRecursive: true"
    )
    properties = {"devicePluginResourceName": b"example.com/cam"}
    async with aclosing(Udev().discover(details, properties)) as lists:
        (device,) = await next_list(lists)
    assert device.id == devpath(usb)
    assert device.properties["UDEV_DEVNODE_0"] == "/dev/bus/usb/001/003"
    assert device.properties["USB_RESOURCE_EXAMPLE_COM_CAM_0"] == "1:3"
    assert "USB_RESOURCE_EXAMPLE_COM_CAM_1" not in device.properties  # /dev/video3


def gpu(bed: Testbed, address: str, group: str | None) -> str:
    """A PCI device (no device node), in IOMMU group `group` when one is given."""
    syspath = bed.add("pci", address, attributes={"vendor": "0x10de", "device": "0x1eb8"})
    if group is not None:
        bed.link_attribute(syspath, "iommu_group", f"../../kernel/iommu_groups/{group}")
    return syspath


async def test_pci_device_gets_its_address_and_vfio_devices(testbed: Testbed) -> None:
    passthrough = gpu(testbed, "0000:01:00.0", "17")
    properties = {"devicePluginResourceName": RESOURCE.encode(), "vfioPassthrough": b"True"}
    async with aclosing(Udev().discover(PCI_RULE, properties)) as lists:
        (device,) = await next_list(lists)
    assert device.id == devpath(passthrough)
    assert device.properties["PCI_RESOURCE_AKRI_SH_UDEV-PASSTHROUGH"] == "0000:01:00.0"
    assert device.device_specs == (
        DeviceSpec("/dev/vfio/17", "/dev/vfio/17", "rw"),
        DeviceSpec("/dev/vfio/vfio", "/dev/vfio/vfio", "rw"),
    )
    del properties["vfioPassthrough"]
    async with aclosing(Udev().discover(PCI_RULE, properties)) as lists:
        (device,) = await next_list(lists)
    assert device.properties["PCI_RESOURCE_AKRI_SH_UDEV-PASSTHROUGH"] == "0000:01:00.0"
    assert device.device_specs == ()


async def test_vfio_needs_an_iommu_group(testbed: Testbed) -> None:
    """A PCI device on no IOMMU (not bound for passthrough) gets no VFIO device specs."""
    gpu(testbed, "0000:02:00.0", None)
    properties = {"devicePluginResourceName": RESOURCE.encode(), "vfioPassthrough": b"true"}
    async with aclosing(Udev().discover(PCI_RULE, properties)) as lists:
        (device,) = await next_list(lists)
    assert device.properties["PCI_RESOURCE_AKRI_SH_UDEV-PASSTHROUGH"] == "0000:02:00.0"
    assert device.device_specs == ()
