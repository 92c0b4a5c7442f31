"""The small pure parts of the plugin layer: socket names, the engine view, PodResources use,
the record of recent grants, ListAndWatch lists, and logging problems once."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from akri import slots
from akri.agent.plugins.allocations import Allocations
from akri.agent.plugins.reclaim import devices_in_use
from akri.agent.plugins.servicer import list_response
from akri.agent.plugins.sockets import new_nonce, socket_name
from akri.api import Instance, InstanceSpec, InstanceStatus, ObjectMeta
from akri.api.pool import released, view, with_usage
from akri.logs import OnceLog
from akri.naming import digest
from akri.proto.deviceplugin.v1beta1.api_pb2 import Device, ListAndWatchResponse
from akri.proto.deviceplugin.v1beta1.constants import HEALTHY, UNHEALTHY
from akri.proto.podresources.v1.api_pb2 import (
    ContainerDevices,
    ContainerResources,
    ListPodResourcesResponse,
    PodResources,
)
from akri.slot_sync import User
from tests.agent.conftest import Clock

DEVICE_PLUGINS = Path("/var/lib/kubelet/device-plugins")


def test_socket_names_carry_the_resource_a_digest_and_the_nonce() -> None:
    resource = "akri.sh/cfg-8120fe"
    assert (
        socket_name(DEVICE_PLUGINS, resource, "k1")
        == f"akri.sh-cfg-8120fe-{digest(resource)}-k1.sock"
    )


@pytest.mark.parametrize(
    "devices",
    [
        {},
        {"cam-1a2b3c-0": True},
        {"cam-1a2b3c-1": False, "cam-1a2b3c-0": True, "cam-1a2b3c-10": False},
        {f"cfg-{n}": n % 3 != 0 for n in range(300)},
    ],
)
def test_list_responses_list_every_device_in_order_with_its_health(
    devices: dict[str, bool],
) -> None:
    built = ListAndWatchResponse(
        devices=[Device(ID=d, health=HEALTHY if h else UNHEALTHY) for d, h in devices.items()]
    )
    sent = list_response(devices)
    assert sent == built
    assert [(d.ID, d.health) for d in sent.devices] == [
        (d, HEALTHY if h else UNHEALTHY) for d, h in devices.items()
    ]
    assert list_response(devices) == sent, "a device listed before is listed alike"


def test_nonces_never_repeat() -> None:
    assert len({new_nonce() for _ in range(1000)}) == 1000


def test_long_names_are_short_sockets_told_apart_by_their_digest() -> None:
    resource = "akri.sh/" + "c" * 63
    name = socket_name(DEVICE_PLUGINS, resource, "zzzzzzzzzzzzz")
    assert name == f"akri.sh-{'c' * 16}-{digest(resource)}-zzzzzzzzzzzzz.sock"
    other = socket_name(DEVICE_PLUGINS, "akri.sh/" + "c" * 62 + "d", "zzzzzzzzzzzzz")
    assert other != name


def test_a_directory_too_long_for_any_socket_is_refused() -> None:
    with pytest.raises(ValueError, match="too long"):
        socket_name(Path("/" + "d" * 100), "akri.sh/cfg", "k1")


def stored(usage: dict[str, str]) -> Instance:
    return Instance(
        metadata=ObjectMeta(name="cfg-8120fe", namespace="default", resource_version="7"),
        spec=InstanceSpec(configuration_name="cfg", capacity=2, nodes=["a"], device_usage=usage),
    )


def test_the_engine_view_and_back() -> None:
    instance = stored({"cfg-8120fe-0": "a"})
    assert view(instance) == slots.SlotPool("cfg-8120fe", "cfg", 2, ("a",), {"cfg-8120fe-0": "a"})
    assert with_usage(instance, {"cfg-8120fe-0": "a"}) is None  # nothing to write
    changed = with_usage(instance, {"cfg-8120fe-0": "a", "cfg-8120fe-1": "C:cfg-0:a"})
    assert changed is not None
    assert changed.spec.device_usage == {"cfg-8120fe-0": "a", "cfg-8120fe-1": "C:cfg-0:a"}
    assert changed.metadata.resource_version == "7"  # the guard the write is based on
    assert instance.spec.device_usage == {"cfg-8120fe-0": "a"}  # the cached copy is untouched


def test_the_view_is_kept_on_the_instance_only_while_its_spec_and_metadata_are() -> None:
    instance = stored({"cfg-8120fe-0": "a"})
    pool = view(instance)
    assert view(instance) is pool  # kept, and with it the pool's own derived views
    assert instance == stored({"cfg-8120fe-0": "a"})  # invisible to == and to the wire
    assert instance.to_wire() == stored({"cfg-8120fe-0": "a"}).to_wire()
    assert view(instance.model_copy(update={"status": InstanceStatus()})) is pool
    assert view(instance.model_copy(deep=True)) == pool

    # Copies carry the kept view along; each sees its own state all the same.
    freed = with_usage(instance, {"cfg-8120fe-0": ""})
    assert freed is not None
    assert view(freed).usage == {"cfg-8120fe-0": ""}
    metadata = instance.metadata.model_copy(update={"deletion_timestamp": datetime.now(UTC)})
    assert view(instance.model_copy(update={"metadata": metadata})).terminating
    assert view(instance) is pool


def test_released_frees_only_the_named_holdings_of_the_node() -> None:
    instance = stored({"cfg-8120fe-0": "a", "cfg-8120fe-1": "C:cfg-0:a"})
    holding = slots.Holding("akri.sh/cfg", "cfg-0")
    freed = released(instance, "a", [holding])
    assert freed is not None
    assert freed.spec.device_usage == {"cfg-8120fe-0": "a", "cfg-8120fe-1": ""}
    assert released(instance, "b", [holding]) is None  # another node's holding: nothing to write


def test_devices_in_use_are_the_akri_devices_of_listed_containers() -> None:
    response = ListPodResourcesResponse(
        pod_resources=[
            PodResources(
                name="p",
                namespace="default",
                containers=[
                    ContainerResources(
                        name="c",
                        devices=[
                            ContainerDevices(resource_name="akri.sh/cfg", device_ids=["cfg-0"]),
                            ContainerDevices(resource_name="nvidia.com/gpu", device_ids=["g"]),
                        ],
                    ),
                    ContainerResources(
                        name="d",
                        devices=[
                            ContainerDevices(
                                resource_name="akri.sh/cfg-8120fe",
                                device_ids=["cfg-8120fe-0", "cfg-8120fe-1"],
                            )
                        ],
                    ),
                ],
            )
        ]
    )
    c, d = User("default", "p", "c"), User("default", "p", "d")
    assert devices_in_use(response) == {
        slots.Holding("akri.sh/cfg", "cfg-0"): {c},
        slots.Holding("akri.sh/cfg-8120fe", "cfg-8120fe-0"): {d},
        slots.Holding("akri.sh/cfg-8120fe", "cfg-8120fe-1"): {d},
    }


def test_recent_grants_are_remembered_for_the_window_only() -> None:
    clock = Clock()
    allocations = Allocations(clock)
    first, second = slots.Holding("akri.sh/cfg", "cfg-0"), slots.Holding("akri.sh/cfg", "cfg-1")
    allocations.granted([first])
    clock.now += 5
    allocations.granted([second])
    assert allocations.recent(10) == {first: 1000.0, second: 1005.0}
    clock.now += 6
    assert allocations.recent(10) == {second: 1005.0}
    allocations.granted([second])  # a re-offer renews it
    assert allocations.recent(10) == {second: 1011.0}


def test_problems_are_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    warn_once = OnceLog(logging.getLogger("test"))
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            warn_once("slot cfg-0 is corrupt")
        warn_once("slot cfg-1 is corrupt")
    assert [r.getMessage() for r in caplog.records] == [
        "slot cfg-0 is corrupt",
        "slot cfg-1 is corrupt",
    ]
