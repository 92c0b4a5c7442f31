"""Which devices each admitted pod holds: the kubelet's checkpointed pod entries (pure)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from akri.sim.kubelet.model import AdmittedPod, Assignment, PodSpec


class PodDevices:
    """Admitted pods and their assignments; survives kubelet restarts like the checkpoint."""

    def __init__(self) -> None:
        self._pods: dict[str, AdmittedPod] = {}

    def get(self, uid: str) -> AdmittedPod | None:
        return self._pods.get(uid)

    def add(self, spec: PodSpec) -> AdmittedPod:
        pod = AdmittedPod(spec)
        self._pods[spec.uid] = pod
        return pod

    def remove(self, uid: str) -> AdmittedPod | None:
        return self._pods.pop(uid, None)

    @staticmethod
    def assign(pod: AdmittedPod, container: str, resource: str, assignment: Assignment) -> None:
        pod.allocations.setdefault(container, {})[resource] = assignment

    @staticmethod
    def unassign(pod: AdmittedPod, container: str, resource: str) -> None:
        held = pod.allocations.get(container, {})
        held.pop(resource, None)
        if not held:
            pod.allocations.pop(container, None)

    def in_use(self, resource: str) -> set[str]:
        """Ids of `resource` held by any container of any admitted pod."""
        return {
            device_id
            for pod in self._pods.values()
            for held in pod.allocations.values()
            if resource in held
            for device_id in held[resource].ids
        }

    def resources(self) -> set[str]:
        """Resources some admitted pod holds devices of."""
        return {r for pod in self._pods.values() for held in pod.allocations.values() for r in held}

    @property
    def pods(self) -> Mapping[str, AdmittedPod]:
        return MappingProxyType(self._pods)
