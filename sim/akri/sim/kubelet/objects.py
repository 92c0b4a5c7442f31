"""Translation between the kubelet emulator and Kubernetes objects (pure, plain dicts).

A pod dict becomes the containers the device manager admits; the emulator's state becomes
Node status and Pod status documents, as a kubelet would write them.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from google.protobuf.json_format import MessageToDict

from akri.sim.kubelet.model import AdmittedPod, Container, ResourceStatus
from akri.sim.quantity import count
from akri.sim.resource_names import is_extended_resource_name
from akri.sim.version import KUBERNETES_VERSION

Object = Mapping[str, Any]
ALLOCATIONS_ANNOTATION: Final = "sim.akri.sh/allocations"
"""Where the bridge records what Allocate answered for each container of a pod."""
CDI_ANNOTATION: Final = "sim.akri.sh/cdi"
"""Where the bridge records what each container got from its CDI devices (DRA claims)."""
NODE_BASE_RESOURCES: Final = {"cpu": "8", "memory": "16Gi", "pods": "110"}
"""Simulated nodes have room to spare for everything but devices."""
NODE_INFO: Final = {
    "kubeletVersion": KUBERNETES_VERSION,
    "containerRuntimeVersion": f"akri-sim://{KUBERNETES_VERSION.removeprefix('v')}",
    "operatingSystem": "linux",
    "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(
        platform.machine(), platform.machine()
    ),
    "kernelVersion": platform.release(),
    "osImage": "akri sim",
    "machineID": "",
    "systemUUID": "",
    "bootID": "",
    "kubeProxyVersion": "",  # deprecated: a 1.31+ kubelet leaves it empty
}
"""What `kubectl get nodes -o wide` shows of a node (VERSION, OS-IMAGE, CONTAINER-RUNTIME)."""
TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})
_READY_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready")


def containers_of(pod: Object) -> tuple[list[Container], list[Container]]:
    """Init containers and containers with their device limits (the kubelet reads limits)."""
    spec = pod.get("spec") or {}
    return (
        [_container(c, init=True) for c in spec.get("initContainers") or []],
        [_container(c, init=False) for c in spec.get("containers") or []],
    )


def _container(container: Object, *, init: bool) -> Container:
    resources = container.get("resources") or {}
    # Extended resources need requests == limits; a request alone is refused by the API.
    wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    devices = {
        name: count(value) for name, value in wanted.items() if is_extended_resource_name(name)
    }
    restartable = init and container.get("restartPolicy") == "Always"
    return Container(container["name"], devices, restartable=restartable)


def allocations(pod: AdmittedPod) -> str:
    """JSON for the allocations annotation: container -> resource -> ids and the answer."""
    record = {
        container: {
            resource: {
                "ids": list(assignment.ids),
                **MessageToDict(assignment.response, preserving_proto_field_name=True),
            }
            for resource, assignment in sorted(held.items())
        }
        for container, held in sorted(pod.allocations.items())
    }
    return json.dumps(record, sort_keys=True)


def allocated_env(pod: AdmittedPod) -> dict[str, dict[str, str]]:
    """Container -> the env vars its device plugins' Allocate answers give it."""
    env: dict[str, dict[str, str]] = {}
    for container, held in pod.allocations.items():
        for _, assignment in sorted(held.items()):
            env.setdefault(container, {}).update(assignment.response.envs)
    return env


def running_status(pod: Object, now: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    ready = [{"type": t, "status": "True", "lastTransitionTime": now} for t in _READY_CONDITIONS]
    return {
        "phase": "Running",
        "startTime": now,
        "hostIP": "127.0.0.1",
        "conditions": ready,
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
            for c in spec.get("containers") or []
        ],
    }


def creating_status(pod: Object) -> dict[str, Any]:
    """What a kubelet writes while it cannot make the pod's sandbox: Pending, every container
    waiting in ContainerCreating."""
    spec = pod.get("spec") or {}
    return {
        "phase": "Pending",
        "hostIP": "127.0.0.1",
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "ready": False,
                "started": False,
                "restartCount": 0,
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
            for c in spec.get("containers") or []
        ],
    }


def failed_status(reason: str, message: str) -> dict[str, Any]:
    """What a kubelet writes for a pod it rejects at admission."""
    return {"phase": "Failed", "reason": reason, "message": message}


def node_status(
    resources: Mapping[str, ResourceStatus],
    dropped: Iterable[str],
    *,
    ready: bool,
    heartbeat: str,
    transition: str,
    addresses: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """Capacity and allocatable with every device resource; dropped ones read 0, as upstream;
    the node's `addresses` when it has any (InternalIP, Hostname)."""
    zero = dict.fromkeys(dropped, "0")
    capacity = {name: str(status.capacity) for name, status in resources.items()}
    allocatable = {name: str(status.allocatable) for name, status in resources.items()}
    condition = {
        "type": "Ready",
        "status": "True" if ready else "Unknown",
        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
        "message": "kubelet is posting ready status"
        if ready
        else "Kubelet stopped posting node status.",
        "lastHeartbeatTime": heartbeat,
        "lastTransitionTime": transition,
    }
    status = {
        "capacity": {**NODE_BASE_RESOURCES, **zero, **capacity},
        "allocatable": {**NODE_BASE_RESOURCES, **zero, **allocatable},
        "conditions": [condition],
        "nodeInfo": NODE_INFO,
    }
    if addresses:
        status["addresses"] = [dict(address) for address in addresses]
    return status
