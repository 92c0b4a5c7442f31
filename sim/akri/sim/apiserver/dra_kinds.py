"""The `resource.k8s.io/v1` kinds of Dynamic Resource Allocation, served as Kubernetes 1.36
serves them by default: DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice.

Validation covers the ResourceSlice rules a publisher can break (k8s.io/kubernetes
pkg/apis/resource/validation/validation.go, validateResourceSliceSpec): one node selection
field, the device limit per slice, unique device names, and per-device node selection only in
slices that declare it.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver import errors
from akri.sim.apiserver.core_kinds import AGE, NAME
from akri.sim.apiserver.resources import Column, ResourceType
from akri.sim.apiserver.selectors import field_path

JSON = dict[str, Any]

GROUP = "resource.k8s.io"
MAX_DEVICES = 128  # resourceapi.ResourceSliceMaxDevices
MAX_DEVICES_WITH_TAINTS_OR_COUNTERS = (
    64  # resourceapi.ResourceSliceMaxDevicesWithTaintsOrConsumesCounters
)
_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
_DEVICE_NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes")


def _get(obj: JSON, path: str) -> Any:
    return field_path(path)(obj)


def _slice_problems(spec: JSON) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    chosen = [key for key in _NODE_SELECTION if spec.get(key) not in (None, "", False)]
    if len(chosen) != 1:
        problems.append(("spec", f"exactly one of {', '.join(_NODE_SELECTION)} is required"))
    devices = spec.get("devices") or []
    limited = any(
        d.get("taints") or d.get("consumesCounters") or d.get("allowMultipleAllocations")
        for d in devices
    )
    limit = MAX_DEVICES_WITH_TAINTS_OR_COUNTERS if limited else MAX_DEVICES
    if len(devices) > limit:
        problems.append(
            ("spec.devices", f"Too many: {len(devices)}: must have at most {limit} items")
        )
    names = [d.get("name") for d in devices]
    if len(set(names)) != len(names):
        problems.append(("spec.devices", "Duplicate value: device names must be unique"))
    per_device = bool(spec.get("perDeviceNodeSelection"))
    for i, device in enumerate(devices):
        has = [key for key in _DEVICE_NODE_SELECTION if device.get(key) not in (None, "", False)]
        if per_device and len(has) != 1:
            problems.append((f"spec.devices[{i}]", "exactly one node selection is required"))
        if not per_device and has:
            problems.append(
                (f"spec.devices[{i}]", "node selection needs spec.perDeviceNodeSelection")
            )
    if not _get(spec, "pool.name"):
        problems.append(("spec.pool.name", "Required value"))
    return problems


def _validate_slice(obj: JSON) -> None:
    problems = _slice_problems(obj.get("spec") or {})
    if problems:
        name = str(_get(obj, "metadata.name"))
        raise errors.invalid(GROUP, "ResourceSlice", name, problems)


def _claim_state(claim: JSON) -> str:
    status = claim.get("status") or {}
    state = "allocated" if status.get("allocation") else "pending"
    return f"{state},reserved" if status.get("reservedFor") else state


def dra_kinds() -> list[ResourceType]:
    """Fresh definitions of the DRA kinds."""
    return [
        ResourceType(
            GROUP, "v1", "DeviceClass", "deviceclasses", "deviceclass", False,
            columns=(NAME, AGE),
            tracks_generation=True,
        ),
        ResourceType(
            GROUP, "v1", "ResourceClaim", "resourceclaims", "resourceclaim", True,
            subresources=frozenset({"status"}),
            columns=(NAME, Column("State", "string", _claim_state), AGE),
            status_on_create={},
            tracks_generation=True,
        ),
        ResourceType(
            GROUP, "v1", "ResourceClaimTemplate", "resourceclaimtemplates",
            "resourceclaimtemplate", True,
            columns=(NAME, AGE),
        ),
        ResourceType(
            GROUP, "v1", "ResourceSlice", "resourceslices", "resourceslice", False,
            columns=(
                NAME,
                Column("Node", "string", lambda s: _get(s, "spec.nodeName")),
                Column("Driver", "string", lambda s: _get(s, "spec.driver")),
                Column("Pool", "string", lambda s: _get(s, "spec.pool.name")),
                AGE,
            ),
            field_labels={
                "spec.nodeName": field_path("spec.nodeName"),
                "spec.driver": field_path("spec.driver"),
            },
            normalize=_validate_slice,
            tracks_generation=True,
        ),
    ]  # fmt: skip
