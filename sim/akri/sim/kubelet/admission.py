"""Pod admission by the device manager: choose ids per container and resource, then Allocate.

Async because it awaits the plugins, but free of I/O: plugins are reached through the
`PluginClient` protocol, so the kubelet's rules can be unit-tested with fakes. The caller
serialises admissions, as the kubelet's single sync loop does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Protocol

from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse
from akri.sim.kubelet.allocation import select
from akri.sim.kubelet.devices import ResourceDevices
from akri.sim.kubelet.model import (
    UNEXPECTED_ADMISSION_ERROR,
    AdmissionError,
    AdmittedPod,
    AllocationError,
    Assignment,
    Container,
    PodSpec,
)
from akri.sim.kubelet.pods import PodDevices


class PluginClient(Protocol):
    """The calls admission makes on a plugin; failures raise AllocationError."""

    @property
    def preferred_allocation_available(self) -> bool: ...

    async def preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str], size: int
    ) -> Sequence[str]: ...

    async def allocate(self, device_ids: Sequence[str]) -> ContainerAllocateResponse: ...


@dataclass
class ResourceEntry:
    """A resource the device manager knows: its devices and its (possibly stopped) plugin."""

    devices: ResourceDevices
    plugin: PluginClient


async def admit(
    spec: PodSpec,
    *,
    resources: Mapping[str, ResourceEntry],
    retired: Set[str],
    pods: PodDevices,
) -> AdmittedPod:
    """Give every container its devices or fail the whole pod, leaving no ids held.

    Re-admitting a known pod (e.g. after a kubelet restart) calls no plugin for containers
    that already hold their devices.
    """
    pod = pods.get(spec.uid)
    created = pod is None
    if pod is None:
        _refuse_retired(spec, retired, pods)
        pod = pods.add(spec)
    added: list[tuple[str, str]] = []
    reusable: dict[str, set[str]] = {}
    try:
        for container in spec.init_containers:
            await _allocate_container(pod, container, reusable, resources, pods, added)
            if container.restartable:
                _withdraw(reusable, pod, container)
            else:
                _offer(reusable, pod, container)
        for container in spec.containers:
            await _allocate_container(pod, container, reusable, resources, pods, added)
            _withdraw(reusable, pod, container)
    except BaseException as error:
        for container_name, resource in added:
            pods.unassign(pod, container_name, resource)
        if created:
            pods.remove(spec.uid)
        if isinstance(error, AllocationError):
            message = f"Allocate failed due to {error}, which is unexpected"
            raise AdmissionError(UNEXPECTED_ADMISSION_ERROR, message) from error
        raise
    return pod


async def _allocate_container(
    pod: AdmittedPod,
    container: Container,
    reusable: Mapping[str, set[str]],
    resources: Mapping[str, ResourceEntry],
    pods: PodDevices,
    added: list[tuple[str, str]],
) -> None:
    for resource, needed in sorted(container.resources.items()):
        if needed <= 0:
            continue
        held = pod.allocations.get(container.name, {}).get(resource)
        if held is not None:
            if len(held.ids) != needed:
                raise AllocationError(
                    f"pod {pod.spec.uid} container {container.name} changed request for "
                    f"resource {resource} from {len(held.ids)} to {needed}"
                )
            continue
        entry = resources.get(resource)
        if entry is None:
            if resource in pods.resources():
                raise AllocationError(f"cannot allocate unregistered device {resource}")
            continue  # not a device-plugin resource: other admission handlers decide
        selection = select(
            resource,
            needed,
            reusable.get(resource, set()),
            entry.devices.healthy_ids,
            pods.in_use(resource),
        )
        preferred: Sequence[str] = ()
        if selection.needs_more and entry.plugin.preferred_allocation_available:
            preferred = await entry.plugin.preferred_allocation(
                selection.offered, selection.reused, needed
            )
        ids = selection.complete(preferred)
        response = await entry.plugin.allocate(ids)
        numa = {device_id: entry.devices.numa_nodes(device_id) for device_id in ids}
        pods.assign(pod, container.name, resource, Assignment(ids, response, numa))
        added.append((container.name, resource))


def _offer(reusable: dict[str, set[str]], pod: AdmittedPod, container: Container) -> None:
    """An init container is done before the next one starts: its ids may be handed on."""
    for resource, assignment in pod.allocations.get(container.name, {}).items():
        reusable.setdefault(resource, set()).update(assignment.ids)


def _withdraw(reusable: dict[str, set[str]], pod: AdmittedPod, container: Container) -> None:
    """App containers and sidecars keep running: their ids must not go to another container."""
    for resource, assignment in pod.allocations.get(container.name, {}).items():
        reusable.get(resource, set()).difference_update(assignment.ids)


def _refuse_retired(spec: PodSpec, retired: Set[str], pods: PodDevices) -> None:
    """A resource dropped after its plugin vanished shows capacity 0 on the node: OutOf<name>."""
    for resource in sorted(retired):
        requested = _pod_request(spec, resource)
        if requested > 0:
            raise AdmissionError(
                f"OutOf{resource}",
                f"Node didn't have enough resource: {resource}, requested: {requested}, "
                f"used: {len(pods.in_use(resource))}, capacity: 0",
            )


def _pod_request(spec: PodSpec, resource: str) -> int:
    """Init containers run one at a time, app containers together."""
    init = max((c.resources.get(resource, 0) for c in spec.init_containers), default=0)
    return max(init, sum(c.resources.get(resource, 0) for c in spec.containers))
