"""What discovery produces and how it fails, free of gRPC so every layer can share it.

A `DiscoveryError` carries the Configuration condition it becomes, so the agent can tell a user
why nothing is discovered without knowing which handler or transport failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from akri.api import ConditionType


@dataclass(frozen=True)
class Mount:
    """A host path a broker container gets mounted."""

    container_path: str
    host_path: str
    read_only: bool = False


@dataclass(frozen=True)
class DeviceSpec:
    """A device node a broker container gets access to."""

    container_path: str
    host_path: str
    permissions: str = ""


@dataclass(frozen=True)
class Device:
    """One discovered device; `id` identifies it across endpoints, nodes and restarts."""

    id: str
    properties: Mapping[str, str] = field(default_factory=dict)
    mounts: tuple[Mount, ...] = ()
    device_specs: tuple[DeviceSpec, ...] = ()


@dataclass(frozen=True)
class Status:
    """How discovery of one Configuration goes: READY, or the condition explaining why not."""

    condition: ConditionType
    message: str

    @property
    def ok(self) -> bool:
        return self.condition is ConditionType.READY


class DiscoveryError(Exception):
    """A discovery failure a user can act on; its text becomes the condition message."""

    condition: ClassVar[ConditionType] = ConditionType.HANDLER_UNAVAILABLE

    @property
    def status(self) -> Status:
        return Status(self.condition, str(self))


class HandlerUnavailable(DiscoveryError):
    """The handler cannot be reached or stopped streaming; retrying may help."""


class InvalidDetails(DiscoveryError):
    """The handler refuses the Configuration's discoveryDetails; retrying cannot help."""

    condition = ConditionType.INVALID_DETAILS


class InvalidProperties(DiscoveryError):
    """A discoveryProperty cannot be resolved (missing Secret, ConfigMap or key)."""

    condition = ConditionType.INVALID_PROPERTIES
