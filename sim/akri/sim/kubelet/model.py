"""The emulator's public data: pods as admitted, what their containers got, resource status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse

UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"
"""Pod status reason the kubelet uses when the device manager fails a pod."""


@dataclass(frozen=True)
class Container:
    """A container as the device manager sees it: its extended-resource limits."""

    name: str
    resources: Mapping[str, int] = field(default_factory=dict)
    restartable: bool = False
    """An init container with `restartPolicy: Always` (a sidecar): its devices are not reused."""


@dataclass(frozen=True)
class PodSpec:
    uid: str
    name: str
    namespace: str
    init_containers: tuple[Container, ...] = ()
    containers: tuple[Container, ...] = ()


@dataclass(frozen=True)
class Assignment:
    """The devices one container holds of one resource and the plugin's Allocate answer."""

    ids: tuple[str, ...]
    response: ContainerAllocateResponse
    numa_nodes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """NUMA nodes of each id when it was allocated, as PodResources reports them."""


@dataclass
class AdmittedPod:
    """A pod the kubelet admitted; `allocations` maps container -> resource -> assignment."""

    spec: PodSpec
    allocations: dict[str, dict[str, Assignment]] = field(default_factory=dict)

    def ids(self, container: str, resource: str) -> tuple[str, ...]:
        assignment = self.allocations.get(container, {}).get(resource)
        return assignment.ids if assignment is not None else ()


@dataclass(frozen=True)
class ResourceStatus:
    """One extended resource as the node reports it."""

    capacity: int
    allocatable: int
    healthy_ids: frozenset[str]
    unhealthy_ids: frozenset[str]
    registered: bool
    """A plugin endpoint is live; False after its stream ended or a kubelet restart."""


class AdmissionError(Exception):
    """The kubelet rejected a pod: `reason` and `message` are what lands in the pod status."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.message = message


class AllocationError(Exception):
    """The device manager could not give a container its devices (wrapped into admission)."""


class RegistrationError(Exception):
    """A Register call the kubelet refuses; the message goes back to the plugin."""
