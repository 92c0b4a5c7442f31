"""The `resource.k8s.io/v1` kinds of Dynamic Resource Allocation, served as Kubernetes 1.36
serves them by default: DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice.

Validation is `validation.resource`'s: kube-apiserver's rules for each kind.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.core_kinds import AGE, NAME
from akri.sim.apiserver.resources import Column, ResourceType
from akri.sim.apiserver.selectors import field_path
from akri.sim.apiserver.validation import resource

JSON = dict[str, Any]

GROUP = "resource.k8s.io"


def _get(obj: JSON, path: str) -> Any:
    return field_path(path)(obj)


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
            validate=resource.device_class,
            tracks_generation=True,
        ),
        ResourceType(
            GROUP, "v1", "ResourceClaim", "resourceclaims", "resourceclaim", True,
            subresources=frozenset({"status"}),
            columns=(NAME, Column("State", "string", _claim_state), AGE),
            status_on_create={},
            validate=resource.resource_claim,
            validate_update=resource.immutable_spec,
            tracks_generation=True,
        ),
        ResourceType(
            GROUP, "v1", "ResourceClaimTemplate", "resourceclaimtemplates",
            "resourceclaimtemplate", True,
            columns=(NAME, AGE),
            validate=resource.resource_claim_template,
            validate_update=resource.immutable_spec,
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
            validate=resource.resource_slice,
            tracks_generation=True,
        ),
    ]  # fmt: skip
