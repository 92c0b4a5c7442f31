"""Pod admission through the kubelet emulator against a fake plugin on a real socket."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Sequence

import grpc
import pytest

from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerPreferredAllocationRequest
from akri.sim.kubelet import UNEXPECTED_ADMISSION_ERROR, AdmissionError, Container, Kubelet
from tests.kubelet.conftest import PluginFactory
from tests.kubelet.plugin import FakePlugin, device

RESOURCE = "akri.sh/cam"
OTHER = "akri.sh/mic"
WAIT_S = 5.0


async def ready(
    kubelet: Kubelet, make_plugin: PluginFactory, ids: Sequence[str], **options: object
) -> FakePlugin:
    """A registered plugin whose devices the kubelet has already seen."""
    plugin = await make_plugin(RESOURCE, [device(i) for i in ids], **options)
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: kubelet.allocatable().get(RESOURCE) == len(ids))
    return plugin


def wants(name: str, count: int = 1, resource: str = RESOURCE, **options: bool) -> Container:
    return Container(name, {resource: count}, **options)


async def test_allocate_gives_each_container_its_own_ids_and_records_the_answer(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a", "b", "c"])
    pod = await kubelet.admit("u1", "p1", "ns", containers=[wants("one", 2), wants("two")])
    assert plugin.allocate_requests == [["a", "b"], ["c"]], "one Allocate per container"
    assert pod.ids("one", RESOURCE) == ("a", "b")
    assert pod.ids("two", RESOURCE) == ("c",)
    response = pod.allocations["one"][RESOURCE].response
    assert dict(response.envs) == {"DEVICES": "a,b"}
    assert [d.host_path for d in response.devices] == ["/dev/a", "/dev/b"]
    assert response.mounts[0].read_only
    assert dict(response.annotations) == {"fake": "yes"}
    assert kubelet.pods["u1"] is pod


async def test_init_container_ids_are_offered_again_to_the_next_container(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a", "b", "c"])
    pod = await kubelet.admit(
        "u1",
        "p1",
        "ns",
        init_containers=[wants("init", 2)],
        containers=[wants("app", 1), wants("app2", 2)],
    )
    assert pod.ids("init", RESOURCE) == ("a", "b")
    assert pod.ids("app", RESOURCE) == ("a",), "re-offered, and only once"
    assert pod.ids("app2", RESOURCE) == ("b", "c")
    assert plugin.allocate_requests == [["a", "b"], ["a"], ["b", "c"]]


async def test_sidecar_ids_are_not_offered_again(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    await ready(kubelet, make_plugin, ["a", "b"])
    pod = await kubelet.admit(
        "u1",
        "p1",
        "ns",
        init_containers=[wants("sidecar", restartable=True)],
        containers=[wants("app")],
    )
    assert (pod.ids("sidecar", RESOURCE), pod.ids("app", RESOURCE)) == (("a",), ("b",))


async def test_preferred_allocation_is_asked_and_followed_when_offered(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    def prefer_last(request: ContainerPreferredAllocationRequest) -> list[str]:
        must = list(request.must_include_deviceIDs)
        rest = [i for i in request.available_deviceIDs if i not in must]
        return must + rest[len(rest) - (request.allocation_size - len(must)) :]

    plugin = await ready(kubelet, make_plugin, ["a", "b", "c", "d"], preferred=prefer_last)
    pod = await kubelet.admit(
        "u1", "p1", "ns", init_containers=[wants("init")], containers=[wants("app", 2)]
    )
    assert pod.ids("init", RESOURCE) == ("d",)
    assert pod.ids("app", RESOURCE) == ("c", "d")
    init_request, app_request = plugin.preferred_requests
    assert list(init_request.available_deviceIDs) == ["a", "b", "c", "d"]
    assert list(init_request.must_include_deviceIDs) == []
    assert init_request.allocation_size == 1
    assert list(app_request.available_deviceIDs) == ["a", "b", "c", "d"]
    assert list(app_request.must_include_deviceIDs) == ["d"]
    assert app_request.allocation_size == 2


async def test_preferred_allocation_is_not_asked_when_reused_ids_suffice_or_not_offered(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a", "b"], preferred=lambda r: [])
    await kubelet.admit("u1", "p1", "ns", init_containers=[wants("i")], containers=[wants("c")])
    assert len(plugin.preferred_requests) == 1, "only the init container needed a choice"
    await make_plugin(OTHER, [device("m")])
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: kubelet.allocatable().get(OTHER) == 1)
    await kubelet.admit("u2", "p2", "ns", containers=[wants("c", resource=OTHER)])
    assert len(plugin.preferred_requests) == 1


async def test_not_enough_healthy_free_devices_fails_the_pod_and_holds_nothing(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a", "b"])
    plugin.set_devices([device("a"), device("b"), device("c", healthy=False)])
    async with asyncio.timeout(WAIT_S):
        await kubelet.wait_for(lambda: kubelet.capacity().get(RESOURCE) == 3)
    await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    with pytest.raises(AdmissionError) as refused:
        await kubelet.admit("u2", "p2", "ns", containers=[wants("x"), wants("y")])
    assert refused.value.reason == UNEXPECTED_ADMISSION_ERROR
    assert "Allocate failed due to requested number of devices unavailable" in (
        refused.value.message
    )
    assert "u2" not in kubelet.pods
    assert plugin.allocate_requests == [["a"], ["b"]], "the first container was tried"
    pod = await kubelet.admit("u3", "p3", "ns", containers=[wants("c")])
    assert pod.ids("c", RESOURCE) == ("b",), "the failed pod's id was released"


async def test_an_allocate_error_fails_admission(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a"])
    plugin.allocate_error = grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(AdmissionError) as refused:
        await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    assert refused.value.reason == UNEXPECTED_ADMISSION_ERROR
    assert "FAILED_PRECONDITION" in refused.value.message
    assert "device on fire" in refused.value.message
    assert kubelet.pods == {}


async def test_a_hung_allocate_fails_admission_at_the_call_timeout(
    make_kubelet: Callable[..., Kubelet],
) -> None:
    async with make_kubelet(call_timeout=0.2) as kubelet, hanging_plugin(kubelet):
        with pytest.raises(AdmissionError, match="DEADLINE_EXCEEDED"):
            await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])


@contextlib.asynccontextmanager
async def hanging_plugin(kubelet: Kubelet) -> AsyncIterator[FakePlugin]:
    """A registered plugin of one device whose Allocate never answers."""
    plugin = FakePlugin(kubelet.device_plugins_dir, RESOURCE, [device("a")])
    try:
        await plugin.start(kubelet.socket)
        async with asyncio.timeout(WAIT_S):
            await kubelet.wait_for(lambda: kubelet.allocatable().get(RESOURCE) == 1)
        plugin.allocate_hangs = True
        yield plugin
    finally:
        await plugin.stop()


async def test_remove_pod_frees_its_ids(kubelet: Kubelet, make_plugin: PluginFactory) -> None:
    await ready(kubelet, make_plugin, ["a"])
    await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    with pytest.raises(AdmissionError):
        await kubelet.admit("u2", "p2", "ns", containers=[wants("c")])
    assert kubelet.remove_pod("u1")
    assert not kubelet.remove_pod("u1")
    pod = await kubelet.admit("u2", "p2", "ns", containers=[wants("c")])
    assert pod.ids("c", RESOURCE) == ("a",)


async def test_admitting_a_known_pod_again_calls_no_plugin(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    plugin = await ready(kubelet, make_plugin, ["a", "b"])
    first = await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    again = await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    assert again is first
    assert plugin.allocate_requests == [["a"]]
    with pytest.raises(AdmissionError, match="changed request"):
        await kubelet.admit("u1", "p1", "ns", containers=[wants("c", 2)])
    assert kubelet.pods["u1"].ids("c", RESOURCE) == ("a",), "the old assignment stays"


async def test_resources_no_plugin_ever_registered_are_left_to_others(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    await ready(kubelet, make_plugin, ["a"])
    pod = await kubelet.admit(
        "u1", "p1", "ns", containers=[Container("c", {RESOURCE: 1, "example.com/other": 1})]
    )
    assert pod.allocations == {"c": {RESOURCE: pod.allocations["c"][RESOURCE]}}


async def test_the_node_changes_are_observable(
    kubelet: Kubelet, make_plugin: PluginFactory
) -> None:
    await ready(kubelet, make_plugin, ["a"])
    before = kubelet.version
    await kubelet.admit("u1", "p1", "ns", containers=[wants("c")])
    assert kubelet.version > before
    before = kubelet.version
    kubelet.remove_pod("u1")
    assert kubelet.version > before


async def test_a_kubelet_stopped_during_an_allocate_fails_that_admission(
    make_kubelet: Callable[..., Kubelet],
) -> None:
    """Soak regression (seed 20261125): the stop closes the plugin's channel under an Allocate
    in flight; grpc reports that as a cancellation, which once escaped admission as a
    CancelledError and silently ended the node's bridge (pods deleted later stayed listed in
    PodResources, their slots held). It is a failed Allocate, as on a real kubelet."""
    async with make_kubelet() as kubelet, hanging_plugin(kubelet) as plugin:
        admission = asyncio.create_task(kubelet.admit("u1", "p1", "ns", containers=[wants("c")]))
        async with asyncio.timeout(WAIT_S):
            await plugin.changes.wait_for(lambda: bool(plugin.allocate_requests))
        await kubelet.stop()

        with pytest.raises(AdmissionError, match=UNEXPECTED_ADMISSION_ERROR):
            await admission
        assert "u1" not in kubelet.pods
