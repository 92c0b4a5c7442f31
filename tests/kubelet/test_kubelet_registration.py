"""Registration, device lists and endpoint lifecycle of the kubelet emulator."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from akri.proto.deviceplugin.v1beta1.api_pb2 import Device, Empty, RegisterRequest
from akri.proto.deviceplugin.v1beta1.constants import VERSION
from akri.sim.kubelet import AdmissionError, Container, Kubelet
from tests.http2 import HEADERS, Tap
from tests.kubelet.conftest import PluginFactory
from tests.kubelet.plugin import FakePlugin, device

RESOURCE = "akri.sh/cam"
WAIT_S = 5.0


async def wait(kubelet: Kubelet, condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(condition)


async def wait_plugin(plugin: FakePlugin, condition: Callable[[], bool]) -> None:
    async with asyncio.timeout(WAIT_S):
        await plugin.changes.wait_for(condition)


async def test_registered_devices_become_capacity_and_healthy_ones_allocatable(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    odd = Device(ID="d", health="healthy")  # only the exact string "Healthy" counts
    await make_plugin(RESOURCE, [device("a"), device("b"), device("c", healthy=False), odd])
    await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 4)
    assert kubelet.allocatable() == {RESOURCE: 2}
    assert kubelet.registered_resources() == {RESOURCE}
    status = kubelet.resources()[RESOURCE]
    assert status.healthy_ids == {"a", "b"}
    assert status.unhealthy_ids == {"c", "d"}
    assert kubelet.registrations[RESOURCE] == 1


async def test_each_list_replaces_the_previous_one(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await make_plugin(RESOURCE, [device("a"), device("b")])
    await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 2)
    plugin.set_devices([device("b", healthy=False), device("z")])
    await wait(kubelet, lambda: kubelet.resources()[RESOURCE].unhealthy_ids == {"b"})
    assert kubelet.resources()[RESOURCE].healthy_ids == {"z"}
    assert (kubelet.capacity(), kubelet.allocatable()) == ({RESOURCE: 2}, {RESOURCE: 1})


def same_file(a: Path, b: Path) -> bool:
    return os.path.samefile(a, b)


async def register_raw(kubelet: Kubelet, **fields: object) -> tuple[grpc.StatusCode, str]:
    """Register through the raw method path; return the error code and message it gets."""
    request = RegisterRequest(version=VERSION, resource_name=RESOURCE, endpoint="x.sock")
    for name, value in fields.items():
        setattr(request, name, value)
    async with grpc.aio.insecure_channel(f"unix://{kubelet.socket}") as channel:
        register = channel.unary_unary(
            "/v1beta1.Registration/Register",
            request_serializer=RegisterRequest.SerializeToString,
            response_deserializer=Empty.FromString,
        )
        try:
            await register(request, timeout=WAIT_S)
        except grpc.aio.AioRpcError as error:
            return error.code(), error.details() or ""
    raise AssertionError("the kubelet accepted the registration")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"version": "v1alpha"}, "not supported"),
        ({"resource_name": "cam"}, "is invalid"),
        ({"resource_name": "kubernetes.io/cam"}, "is invalid"),
        ({"resource_name": "akri.sh/bad name"}, "is invalid"),
    ],
)
async def test_invalid_registrations_are_refused(
    kubelet: Kubelet, fields: dict[str, object], message: str
) -> None:
    code, details = await register_raw(kubelet, **fields)
    assert code == grpc.StatusCode.UNKNOWN
    assert message in details
    assert kubelet.resources() == {}


async def test_registration_fails_when_the_plugin_socket_does_not_answer(
    make_kubelet: Callable[..., Kubelet],
) -> None:
    async with make_kubelet(dial_timeout=0.2) as kubelet:
        _, details = await register_raw(kubelet, endpoint="nobody-home.sock")
        assert "failed to dial device plugin" in details
        assert kubelet.resources() == {}


async def test_register_joins_the_endpoint_to_the_plugin_dir_like_go(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await make_plugin(RESOURCE, [device("a")], register=False)
    await plugin.register(kubelet.socket, endpoint=f"/{plugin.socket.name}")
    await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 1)


async def test_the_kubelet_dials_plugins_without_bandwidth_probes(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    """A restarted kubelet dials a thousand plugins at once; a probe's PING and its answer
    would cost both sides on every connection."""
    plugin = await make_plugin(RESOURCE, [device("a")], register=False)
    tap_socket = kubelet.device_plugins_dir / "tap.sock"
    async with Tap(tap_socket, plugin.socket) as tap:
        await plugin.register(kubelet.socket, endpoint=tap_socket.name)
        await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 1)
        frames = tap.client_frames()
    assert len([frame for frame in frames if frame.kind == HEADERS]) == 2  # options, the list
    assert not [frame for frame in frames if frame.ping]


async def test_a_new_registration_replaces_the_old_endpoint(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    old = await make_plugin(RESOURCE, [device("a")])
    await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 1)
    new = await make_plugin(RESOURCE, [device("x"), device("y")])
    await wait_plugin(old, lambda: old.streams_closed == 1)
    await wait(kubelet, lambda: kubelet.resources()[RESOURCE].healthy_ids == {"x", "y"})
    assert kubelet.registrations[RESOURCE] == 2
    pod = await kubelet.admit("u1", "p1", "default", containers=[Container("c", {RESOURCE: 2})])
    assert pod.ids("c", RESOURCE) == ("x", "y")
    assert (old.allocate_requests, new.allocate_requests) == ([], [["x", "y"]])


async def test_a_cut_stream_stops_the_endpoint_until_the_plugin_registers_again(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await make_plugin(RESOURCE, [device("a"), device("b")])
    await wait(kubelet, lambda: kubelet.allocatable().get(RESOURCE) == 2)
    plugin.end_streams()
    await wait(kubelet, lambda: RESOURCE not in kubelet.registered_resources())
    assert (kubelet.capacity(), kubelet.allocatable()) == ({RESOURCE: 2}, {RESOURCE: 0})
    with pytest.raises(AdmissionError) as refused:
        await kubelet.admit("u1", "p1", "default", containers=[Container("c", {RESOURCE: 1})])
    assert refused.value.reason == "UnexpectedAdmissionError"
    assert plugin.allocate_requests == []
    assert plugin.streams_opened == 1, "the kubelet must never re-open ListAndWatch by itself"

    await plugin.start(kubelet.socket)
    await wait(kubelet, lambda: kubelet.allocatable().get(RESOURCE) == 2)
    assert plugin.streams_opened == 2
    await kubelet.admit("u1", "p1", "default", containers=[Container("c", {RESOURCE: 1})])
    assert plugin.allocate_requests == [["a"]]


async def test_allocate_is_refused_on_a_stopped_endpoint_even_for_reused_ids(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    """Ids re-offered from an init container skip the health check but not the endpoint."""
    plugin = await make_plugin(RESOURCE, [device("a")])
    await wait(kubelet, lambda: kubelet.allocatable().get(RESOURCE) == 1)
    init = Container("init", {RESOURCE: 1})
    await kubelet.admit("u1", "p1", "default", init_containers=[init])
    plugin.end_streams()
    await wait(kubelet, lambda: RESOURCE not in kubelet.registered_resources())
    with pytest.raises(AdmissionError, match="has been stopped"):
        await kubelet.admit(
            "u1",
            "p1",
            "default",
            init_containers=[init],
            containers=[Container("c", {RESOURCE: 1})],
        )


async def test_a_stopped_resource_is_dropped_after_the_grace_period(
    make_kubelet: Callable[..., Kubelet], socket_dir: Path
) -> None:
    async with make_kubelet(endpoint_stop_grace_period=0.05) as kubelet:
        plugin = FakePlugin(kubelet.device_plugins_dir, RESOURCE, [device("a")])
        try:
            await plugin.start(kubelet.socket)
            await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 1)
            plugin.end_streams()
            await wait(kubelet, lambda: RESOURCE not in kubelet.resources())
            with pytest.raises(AdmissionError) as refused:
                await kubelet.admit("u", "p", "ns", containers=[Container("c", {RESOURCE: 1})])
            assert refused.value.reason == f"OutOf{RESOURCE}"
        finally:
            await plugin.stop()


async def test_start_deletes_every_socket_in_the_plugin_dir_but_keeps_other_files(
    make_kubelet: Callable[..., Kubelet], socket_dir: Path
) -> None:
    plugin_dir = socket_dir / "dp"
    plugin_dir.mkdir()
    stale = plugin_dir / "stale.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(stale))
    (plugin_dir / "kubelet_internal_checkpoint").write_text("{}")
    (plugin_dir / "subdir").mkdir()
    async with make_kubelet() as kubelet:
        assert not stale.exists()
        assert (plugin_dir / "kubelet_internal_checkpoint").exists()
        assert (plugin_dir / "subdir").is_dir()
        assert (plugin_dir / "DEPRECATION").is_file()
        assert kubelet.socket.is_socket()
        assert kubelet.pod_resources_socket.is_socket()


async def test_restart_deletes_plugin_sockets_forgets_registrations_and_keeps_pods(
    kubelet: Kubelet, make_plugin: PluginFactory, socket_dir: Path
) -> None:
    plugin = await make_plugin(RESOURCE, [device("a"), device("b")])
    await wait(kubelet, lambda: kubelet.allocatable().get(RESOURCE) == 2)
    await kubelet.admit("u1", "p1", "default", containers=[Container("c", {RESOURCE: 1})])
    first_socket = plugin.socket
    old_kubelet_socket = socket_dir / "old-kubelet.sock"
    os.link(kubelet.socket, old_kubelet_socket)  # pins the inode so it cannot be reused

    await kubelet.restart()
    assert not first_socket.exists()
    assert not same_file(kubelet.socket, old_kubelet_socket), "kubelet.sock was re-created"
    assert kubelet.resources()[RESOURCE].registered is False
    assert (kubelet.capacity(), kubelet.allocatable()) == ({RESOURCE: 0}, {RESOURCE: 0})
    assert kubelet.pods["u1"].ids("c", RESOURCE) == ("a",)
    await wait_plugin(plugin, lambda: plugin.streams_closed == 1)

    plugin.follow_kubelet(kubelet.socket)
    await wait(kubelet, lambda: kubelet.allocatable().get(RESOURCE) == 2)
    assert plugin.socket != first_socket
    assert kubelet.registrations[RESOURCE] == 2
    pod = await kubelet.admit("u2", "p2", "default", containers=[Container("c", {RESOURCE: 1})])
    assert pod.ids("c", RESOURCE) == ("b",), "the checkpoint still holds `a` for pod u1"


async def test_stop_hangs_up_and_removes_the_sockets(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await make_plugin(RESOURCE, [device("a")])
    await wait(kubelet, lambda: kubelet.capacity().get(RESOURCE) == 1)
    await kubelet.stop()
    assert not kubelet.running
    assert not kubelet.socket.exists()
    assert not kubelet.pod_resources_socket.exists()
    assert kubelet.resources() == {}
    await wait_plugin(plugin, lambda: plugin.streams_closed == 1)
    with pytest.raises(RuntimeError, match="not running"):
        await kubelet.admit("u", "p", "ns")
    await kubelet.start()
    assert kubelet.capacity() == {RESOURCE: 0}


async def test_a_plugin_that_stops_is_told_in_one_info_line(
    kubelet: Kubelet, make_plugin: PluginFactory, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 27: every Configuration deleted gave one warning per plugin ('ListAndWatch of ...
    failed: Cancelling all calls'); a plugin stopping is expected, and told at INFO."""
    plugin = await make_plugin(RESOURCE, [device("a")])
    await wait(kubelet, lambda: RESOURCE in kubelet.registered_resources())
    caplog.set_level("INFO", logger="akri.sim.kubelet.endpoint")

    await plugin.stop()
    await wait(kubelet, lambda: RESOURCE not in kubelet.registered_resources())

    told = [r for r in caplog.records if r.name == "akri.sim.kubelet.endpoint"]
    assert [(r.levelname, r.getMessage()) for r in told] == [
        ("INFO", f"ListAndWatch of {RESOURCE} ended: Cancelling all calls")
    ]
