"""The pure parts of the agent's DRA plugin: claims to Instances, CDI specs, the checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from akri.agent.dra import cdi, checkpoint
from akri.agent.dra.claims import ClaimError, allocated_requests, device_index
from akri.api import Configuration, Instance
from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse, DeviceSpec, Mount

NODE = "n"


def config(unique: bool) -> Configuration:
    return Configuration.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Configuration",
            "metadata": {"name": "cam", "namespace": "default"},
            "spec": {"discoveryHandler": {"name": "onvif"}, "capacity": 2, "uniqueDevices": unique},
        }
    )


def instance(name: str, *, shared: bool, nodes: list[str], deleting: bool = False) -> Instance:
    metadata: dict[str, Any] = {"name": name, "namespace": "default"}
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return Instance.from_wire(
        {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "metadata": metadata,
            "spec": {"configurationName": "cam", "capacity": 2, "shared": shared, "nodes": nodes},
        }
    )


def test_the_index_holds_the_devices_this_node_sees_in_the_pools_they_are_published_in() -> None:
    instances = [
        instance("cam-aaaaaa", shared=False, nodes=[NODE]),
        instance("cam-bbbbbb", shared=True, nodes=["m", NODE], deleting=True),
        instance("cam-cccccc", shared=True, nodes=["m"]),
    ]
    unique = device_index(instances, lambda ns, name: config(True), NODE)
    assert {k: v.healthy for k, v in unique.items()} == {
        ("cam/node/n", "cam-aaaaaa"): True,
        ("cam/shared", "cam-bbbbbb"): False,
    }
    slots = device_index(instances, lambda ns, name: config(False), NODE)
    assert set(slots) == {
        ("cam/node/n", "cam-aaaaaa-0"),
        ("cam/node/n", "cam-aaaaaa-1"),
        ("cam/shared", "cam-bbbbbb-0"),
        ("cam/shared", "cam-bbbbbb-1"),
    }
    assert device_index(instances, lambda ns, name: None, NODE) == {}


def claim(results: list[dict[str, str]], uid: str = "u1", allocated: bool = True) -> dict[str, Any]:
    status = {"allocation": {"devices": {"results": results}}} if allocated else {}
    return {"metadata": {"name": "c", "namespace": "default", "uid": uid}, "status": status}


def result(request: str, device: str, driver: str = "akri.sh") -> dict[str, str]:
    return {"request": request, "driver": driver, "pool": "cam/node/n", "device": device}


def test_allocated_requests_group_akri_devices_by_request() -> None:
    index = device_index(
        [instance("cam-aaaaaa", shared=False, nodes=[NODE])], lambda ns, name: config(False), NODE
    )
    found = allocated_requests(
        claim(
            [
                result("r", "cam-aaaaaa-0"),
                result("other", "gpu-0", driver="gpu.example.com"),
                result("r", "cam-aaaaaa-1"),
            ]
        ),
        "u1",
        index,
    )
    assert list(found) == ["r"]
    assert [i.metadata.name for i in found["r"].instances] == ["cam-aaaaaa", "cam-aaaaaa"]
    assert [r["device"] for r in found["r"].results] == ["cam-aaaaaa-0", "cam-aaaaaa-1"]


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        (claim([], uid="u2"), "deleted and made again"),
        (claim([], allocated=False), "not allocated"),
        (claim([result("r", "cam-ffffff-0")]), "not on this node"),
    ],
)
def test_claims_that_cannot_be_prepared_say_why(stored: dict[str, Any], message: str) -> None:
    with pytest.raises(ClaimError, match=message):
        allocated_requests(stored, "u1", {})


def test_a_claim_spec_carries_one_cdi_device_per_request_with_the_allocate_edits() -> None:
    answer = ContainerAllocateResponse(
        envs={"B": "2", "A": "1"},
        mounts=[Mount(container_path="/c", host_path="/h", read_only=True)],
        devices=[DeviceSpec(container_path="/dev/x", host_path="/dev/y", permissions="rw")],
    )
    spec = cdi.claim_spec("uid", {"r": answer, "q": ContainerAllocateResponse()})
    assert spec == {
        "cdiVersion": cdi.CDI_VERSION,
        "kind": "akri.sh/claim",
        "devices": [
            {"name": "uid-q", "containerEdits": {"env": []}},
            {
                "name": "uid-r",
                "containerEdits": {
                    "env": ["A=1", "B=2"],
                    "mounts": [
                        {"hostPath": "/h", "containerPath": "/c", "options": ["bind", "ro"]}
                    ],
                    "deviceNodes": [{"path": "/dev/x", "hostPath": "/dev/y", "permissions": "rw"}],
                },
            },
        ],
    }
    assert cdi.device_id("uid", "r") == "akri.sh/claim=uid-r"


def test_an_unreadable_checkpoint_is_moved_aside_and_the_plugin_starts_empty(
    tmp_path: Path,
) -> None:
    path = tmp_path / checkpoint.FILE_NAME
    assert checkpoint.load(path) == {}
    checkpoint.save(path, {"u": {"name": "c"}})
    assert checkpoint.load(path) == {"u": {"name": "c"}}
    path.write_text("{not json")
    assert checkpoint.load(path) == {}
    assert (tmp_path / f"{checkpoint.FILE_NAME}.corrupt").read_text() == "{not json"
    assert not path.exists()
