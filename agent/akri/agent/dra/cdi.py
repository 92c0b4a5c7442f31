"""Pure: what a prepared claim gives its containers, as a CDI spec (Container Device Interface).

The contents are the device plugin's Allocate answer (`akri.agent.plugins.response`), computed
by the same code: one CDI device per request of the claim, whose edits are what a container
granted that request's devices gets (docs/design.md §4 env rules, the handler's mounts and
device nodes). Every container of a request gets all of its devices, so a request is what the
env rules see as "one container".

One spec file per claim (`akri.sh-<claim uid>.json`), so claims sharing a device never touch
each other's files and unpreparing is one delete.
"""

from __future__ import annotations

from typing import Any

from akri.naming import GROUP
from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse

JSON = dict[str, Any]

CDI_VERSION = "0.6.0"
"""Covers env, mounts and device nodes (the CDI spec's version rules)."""
KIND = f"{GROUP}/claim"
"""`<vendor>/<class>` of every akri-py CDI device."""
SPEC_SUFFIX = ".json"


def spec_file_name(claim_uid: str) -> str:
    return f"{GROUP}-{claim_uid}{SPEC_SUFFIX}"


def device_name(claim_uid: str, request: str) -> str:
    """Unique across claims; only characters CDI allows in a device name."""
    return f"{claim_uid}-{request}"


def device_id(claim_uid: str, request: str) -> str:
    """The fully qualified CDI device id (`<kind>=<name>`) the runtime resolves."""
    return f"{KIND}={device_name(claim_uid, request)}"


def container_edits(response: ContainerAllocateResponse) -> JSON:
    """An Allocate answer for one container as CDI `containerEdits`."""
    edits: JSON = {"env": [f"{key}={value}" for key, value in sorted(response.envs.items())]}
    if response.mounts:
        edits["mounts"] = [
            {
                "hostPath": m.host_path,
                "containerPath": m.container_path,
                "options": ["bind", "ro"] if m.read_only else ["bind"],
            }
            for m in response.mounts
        ]
    if response.devices:
        edits["deviceNodes"] = [
            {"path": d.container_path, "hostPath": d.host_path, "permissions": d.permissions}
            for d in response.devices
        ]
    return edits


def claim_spec(claim_uid: str, requests: dict[str, ContainerAllocateResponse]) -> JSON:
    """The CDI spec of a claim: one device per request name."""
    return {
        "cdiVersion": CDI_VERSION,
        "kind": KIND,
        "devices": [
            {"name": device_name(claim_uid, request), "containerEdits": container_edits(answer)}
            for request, answer in sorted(requests.items())
        ],
    }
