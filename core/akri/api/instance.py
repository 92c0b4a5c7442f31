"""The Instance resource: one discovered device, which nodes see it and who holds its slots."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, ClassVar, Literal

from pydantic import AfterValidator, Field

from akri.api.configuration import MAX_CAPACITY, Configuration
from akri.api.reports import NodeReport
from akri.api.wire import Condition, ObjectMeta, Resource, WireModel
from akri.naming import LABEL_CONFIGURATION, instance_name, slot_ids


def _no_duplicates(nodes: list[str]) -> list[str]:
    """The CRD declares `nodes` a set; reject here what the API server would reject."""
    if len(set(nodes)) != len(nodes):
        raise ValueError(f"nodes must not repeat a node: {nodes}")
    return nodes


class InstanceSpec(WireModel):
    """A device as the cluster sees it."""

    configuration_name: str = Field(min_length=1)
    """The Configuration that discovered the device."""
    capacity: int = Field(default=1, ge=1, le=MAX_CAPACITY)
    """How many pods may use the device at once (copied from the Configuration)."""
    shared: bool = False
    """Whether several nodes can reach the device (network devices) or only one (USB devices)."""
    nodes: Annotated[list[str], AfterValidator(_no_duplicates)] = Field(
        default_factory=list, json_schema_extra={"x-kubernetes-list-type": "set"}
    )
    """Nodes that currently see the device."""
    broker_properties: dict[str, str] = Field(default_factory=dict)
    """Device properties plus the Configuration's brokerProperties, passed to pods as env vars."""
    device_usage: dict[str, str] = Field(default_factory=dict)
    """Slot id to holder: empty when free, `<node>`, or `C:<virtual device>:<node>`."""


class InstanceConditionType(StrEnum):
    """Condition types agents report on an Instance."""

    SLOT_CONFLICT = "SlotConflict"
    """A running container uses a slot that deviceUsage records for another holder."""
    PLUGIN_UNAVAILABLE = "PluginUnavailable"
    """A node cannot serve the Instance's device plugin to its kubelet."""
    DEVICE_OFFLINE = "DeviceOffline"
    """A node no longer discovers the device and leaves `nodes` unless it comes back in time."""


INSTANCE_NODE_PROBLEMS: tuple[str, ...] = (
    InstanceConditionType.PLUGIN_UNAVAILABLE,
    InstanceConditionType.DEVICE_OFFLINE,
)
"""The problems nodes report per node in an Instance's `status.nodes` (SlotConflict has rules
of its own)."""


class InstanceStatus(WireModel):
    """Problems nodes observed with the Instance, for `kubectl describe`."""

    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Current observations, at most one per type; PluginUnavailable and DeviceOffline are
    computed from `nodes`."""
    nodes: list[NodeReport] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["node"]},
    )
    """One row per node that has a problem with the Instance."""

    def condition(self, type: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type), None)


class Instance(Resource):
    """A discovered device, shared by up to `capacity` pods."""

    plural: ClassVar[str] = "instances"
    kind: Literal["Instance"] = "Instance"
    spec: InstanceSpec
    status: InstanceStatus | None = None


def new_instance(
    configuration: Configuration,
    device_id: str,
    node: str,
    *,
    shared: bool,
    properties: Mapping[str, str],
) -> Instance:
    """The Instance `node` creates for a newly discovered device.

    It is owned by its Configuration (deleting the Configuration deletes it), labelled with it
    (so agents can list a Configuration's Instances) and starts with every slot free.
    """
    owner = configuration.owner_reference()
    name = instance_name(owner.name, device_id, None if shared else node)
    return Instance(
        metadata=ObjectMeta(
            name=name,
            namespace=configuration.metadata.namespace,
            labels={LABEL_CONFIGURATION: owner.name},
            owner_references=[owner],
        ),
        spec=InstanceSpec(
            configuration_name=owner.name,
            capacity=configuration.spec.capacity,
            shared=shared,
            nodes=[node],
            broker_properties={**properties, **configuration.spec.broker_properties},
            device_usage=dict.fromkeys(slot_ids(name, configuration.spec.capacity), ""),
        ),
    )
