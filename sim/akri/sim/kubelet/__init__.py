"""Kubelet emulator: the device-plugin and PodResources side of a kubelet for simulated nodes."""

from akri.sim.kubelet.kubelet import (
    DEFAULT_CALL_TIMEOUT_S,
    DIAL_TIMEOUT_S,
    ENDPOINT_STOP_GRACE_PERIOD_S,
    Kubelet,
)
from akri.sim.kubelet.model import (
    UNEXPECTED_ADMISSION_ERROR,
    AdmissionError,
    AdmittedPod,
    Assignment,
    Container,
    PodSpec,
    ResourceStatus,
)

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DIAL_TIMEOUT_S",
    "ENDPOINT_STOP_GRACE_PERIOD_S",
    "UNEXPECTED_ADMISSION_ERROR",
    "AdmissionError",
    "AdmittedPod",
    "Assignment",
    "Container",
    "Kubelet",
    "PodSpec",
    "ResourceStatus",
]
