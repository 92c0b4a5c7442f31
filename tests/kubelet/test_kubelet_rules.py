"""The kubelet emulator's pure rules: names, device tables, id choice, admission with fakes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse
from akri.sim.kubelet import AdmissionError, Container, PodSpec
from akri.sim.kubelet.admission import ResourceEntry, admit
from akri.sim.kubelet.allocation import select
from akri.sim.kubelet.devices import DeviceInfo, ResourceDevices
from akri.sim.kubelet.model import AllocationError
from akri.sim.kubelet.pods import PodDevices
from akri.sim.resource_names import is_extended_resource_name

R = "akri.sh/cam"


@pytest.mark.parametrize(
    "name",
    ["akri.sh/cam", "example.com/gpu", "nvidia.com/mig-1g.10gb", "a/b", "akri.sh/CAM_0"],
)
def test_extended_resource_names(name: str) -> None:
    assert is_extended_resource_name(name)


@pytest.mark.parametrize(
    "name",
    [
        "cam",
        "kubernetes.io/cam",
        "foo.kubernetes.io/cam",
        "requests.akri.sh/cam",
        "akri.sh/",
        "/cam",
        "Akri.sh/cam",
        "akri.sh/a/b",
        "akri.sh/-cam",
        "akri.sh/" + "x" * 64,
        "x" * 245 + ".sh/cam",
    ],
)
def test_names_the_kubelet_refuses(name: str) -> None:
    assert not is_extended_resource_name(name)


def test_device_table_counts_and_replacement() -> None:
    table = ResourceDevices()
    listed = {"a": DeviceInfo(True, (0,)), "b": DeviceInfo(False)}
    reads: list[int] = []

    def read() -> dict[str, DeviceInfo]:
        reads.append(1)
        return dict(listed)

    assert table.receive(("a", "b"), read)
    assert not table.receive(("a", "b"), read), "the same list again is no change"
    assert reads == [], "a list is read only when the table is asked for"
    assert table.healthy_ids == {"a"}
    assert table.unhealthy_ids == {"b"}
    assert table.numa_nodes("a") == (0,)
    assert table.numa_nodes("gone") == ()
    assert table.mark_unhealthy()
    assert not table.mark_unhealthy()
    assert table.healthy_ids == set()
    assert table.numa_nodes("a") == (0,), "placement survives the health change"
    assert reads == [1]
    assert table.receive(("a", "b"), read), "the same list after the stream's end is a change"
    assert table.healthy_ids == {"a"}


def test_select_takes_reused_ids_first_then_free_sorted_ids() -> None:
    selection = select(R, 3, reusable={"r"}, healthy={"c", "a", "b", "r"}, in_use={"b", "r"})
    assert selection.reused == ("r",)
    assert selection.free == ("a", "c")
    assert selection.needs_more
    assert selection.offered == ("a", "c", "r")
    assert selection.complete() == ("a", "c", "r")


def test_select_with_enough_reusable_ids_leaves_nothing_to_choose() -> None:
    selection = select(R, 1, reusable={"y", "x"}, healthy=set(), in_use={"x", "y"})
    assert not selection.needs_more
    assert selection.complete(preferred=["z"]) == ("x",)


def test_preferred_ids_win_but_only_among_free_ones() -> None:
    selection = select(R, 2, reusable=set(), healthy={"a", "b", "c", "d"}, in_use={"d"})
    assert selection.complete(preferred=["d", "c", "nope"]) == ("a", "c")
    assert selection.complete(preferred=["c", "b"]) == ("b", "c")


def test_select_fails_like_the_kubelet_when_too_few_are_free() -> None:
    with pytest.raises(AllocationError, match=r"unavailable for akri.sh/cam. Requested: 2, Avail"):
        select(R, 2, reusable=set(), healthy={"a", "b"}, in_use={"a"})


class FakeClient:
    """A PluginClient that answers from memory and can be told to fail."""

    def __init__(self, fail_on: str | None = None) -> None:
        self.fail_on = fail_on
        self.calls: list[tuple[str, ...]] = []

    @property
    def preferred_allocation_available(self) -> bool:
        return False

    async def preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> Sequence[str]:
        raise AssertionError("not offered")

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocateResponse:
        self.calls.append(tuple(device_ids))
        if self.fail_on in device_ids:
            raise AllocationError("boom")
        return ContainerAllocateResponse(envs={"IDS": ",".join(device_ids)})


def entry(ids: Sequence[str], client: FakeClient) -> ResourceEntry:
    return ResourceEntry(ResourceDevices({i: DeviceInfo(True) for i in ids}), client)


def pod(uid: str, *containers: Container, init: Sequence[Container] = ()) -> PodSpec:
    return PodSpec(uid, f"pod-{uid}", "ns", tuple(init), tuple(containers))


async def test_a_failure_in_a_later_container_rolls_back_the_earlier_ones() -> None:
    client = FakeClient(fail_on="b")
    pods = PodDevices()
    with pytest.raises(AdmissionError) as refused:
        await admit(
            pod("u", Container("one", {R: 1}), Container("two", {R: 1})),
            resources={R: entry(["a", "b"], client)},
            retired=set(),
            pods=pods,
        )
    assert refused.value.message == "Allocate failed due to boom, which is unexpected"
    assert client.calls == [("a",), ("b",)]
    assert pods.pods == {}
    assert pods.in_use(R) == set()


async def test_a_failed_readmission_keeps_what_the_pod_already_held() -> None:
    client = FakeClient(fail_on="b")
    pods = PodDevices()
    resources = {R: entry(["a", "b"], client)}
    await admit(pod("u", Container("one", {R: 1})), resources=resources, retired=set(), pods=pods)
    spec = pod("u", Container("one", {R: 1}), Container("two", {R: 1}))
    with pytest.raises(AdmissionError):
        await admit(spec, resources=resources, retired=set(), pods=pods)
    assert pods.in_use(R) == {"a"}


async def test_held_ids_of_an_unregistered_resource_block_new_allocations() -> None:
    pods = PodDevices()
    resources = {R: entry(["a"], FakeClient())}
    await admit(pod("u1", Container("c", {R: 1})), resources=resources, retired=set(), pods=pods)
    with pytest.raises(AdmissionError, match=r"cannot allocate unregistered device akri\.sh/cam"):
        await admit(pod("u2", Container("c", {R: 1})), resources={}, retired=set(), pods=pods)


async def test_a_retired_resource_is_out_of_capacity() -> None:
    pods = PodDevices()
    spec = pod("u", Container("a", {R: 1}), Container("b", {R: 2}), init=[Container("i", {R: 2})])
    with pytest.raises(AdmissionError) as refused:
        await admit(spec, resources={}, retired={R}, pods=pods)
    assert refused.value.reason == "OutOfakri.sh/cam"
    assert refused.value.message == (
        "Node didn't have enough resource: akri.sh/cam, requested: 3, used: 0, capacity: 0"
    )
