"""The Configuration resource: what to discover, how many pods share a device, what to deploy."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from akri.api.reports import NodeReport
from akri.api.wire import Condition, ExactlyOne, Resource, WireModel, cel_rule
from akri.naming import DIGEST_HEX_LENGTH, MAX_CONFIGURATION_NAME, MAX_RESOURCE_NAME_PART

PROPERTY_NAME_PATTERN = r"^[_A-Za-z][_A-Za-z0-9]*$"
MAX_CAPACITY = 1000
"""An Instance keeps one deviceUsage entry per slot: 1000 of the longest (a 63-character slot
id, a 253-character node name) make about 330 KB, well within the API's request size (3 MiB)
and etcd's object limit (1.5 MiB); a million slots were refused only at the first write."""
HANDLER_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]*$"
HANDLER_NAME_MAX = 63
HANDLER_NAME_MESSAGE = (
    "a discovery handler name starts with a letter and has only letters, digits, - and _ "
    f"(at most {HANDLER_NAME_MAX} characters), like debugEcho, udev, onvif or mdns"
)
UNIQUE_PROPERTIES_MESSAGE = "discoveryProperties names must be unique"


class ConditionType(StrEnum):
    """Condition types the agent and controller report on a Configuration."""

    READY = "Ready"
    HANDLER_UNAVAILABLE = "HandlerUnavailable"
    INVALID_DETAILS = "InvalidDetails"
    INVALID_PROPERTIES = "InvalidProperties"
    INVALID_NAME = "InvalidName"
    INVALID_BROKER_SPEC = "InvalidBrokerSpec"
    INVALID_CONFIGURATION = "InvalidConfiguration"
    PLUGIN_UNAVAILABLE = "PluginUnavailable"
    WRITE_REFUSED = "WriteRefused"
    CONTROLLER_WRITE_REFUSED = "ControllerWriteRefused"
    REFUSED_HOST_PATH = "RefusedHostPath"


NODE_PROBLEMS: tuple[str, ...] = (
    ConditionType.HANDLER_UNAVAILABLE,
    ConditionType.INVALID_DETAILS,
    ConditionType.INVALID_PROPERTIES,
    ConditionType.INVALID_NAME,
    ConditionType.INVALID_CONFIGURATION,
    ConditionType.REFUSED_HOST_PATH,
    ConditionType.PLUGIN_UNAVAILABLE,
    ConditionType.WRITE_REFUSED,
)
"""The problems agents report per node in `status.nodes`; the first one any node has is the
reason of Ready=False."""


class KeySelector(WireModel):
    """A key of a Secret or ConfigMap."""

    name: str = Field(min_length=1)
    """Name of the Secret or ConfigMap."""
    key: str = Field(min_length=1)
    """Key within its data."""
    namespace: str | None = None
    """Namespace of the Secret or ConfigMap: the Configuration's own, which is the default; the
    agent and the webhook refuse any other."""
    optional: bool = False
    """When true a missing key leaves the property out; when false discovery stops with an error."""


class PropertySource(ExactlyOne):
    """Where a discovery property's value is read from."""

    one_of = ("secret_key_ref", "config_map_key_ref")
    secret_key_ref: KeySelector | None = None
    """A key of a Secret (credentials belong here)."""
    config_map_key_ref: KeySelector | None = None
    """A key of a ConfigMap."""


class DiscoveryProperty(ExactlyOne):
    """A named value passed to the discovery handler with every discovery request."""

    one_of = ("value", "value_from")
    name: str = Field(pattern=PROPERTY_NAME_PATTERN)
    """Property name, as the handler expects it."""
    value: str | None = None
    """The value itself."""
    value_from: PropertySource | None = None
    """A Secret or ConfigMap key holding the value."""


class DiscoveryHandlerInfo(WireModel):
    """Which discovery handler finds the devices, and what it should look for."""

    name: str = Field(
        max_length=HANDLER_NAME_MAX,
        json_schema_extra=cel_rule(f"self.matches('{HANDLER_NAME_PATTERN}')", HANDLER_NAME_MESSAGE),
    )
    """Name the handler registers with, e.g. debugEcho, udev, onvif, mdns."""
    discovery_details: str = ""
    """Handler-specific settings as a YAML string, parsed by the handler."""
    discovery_properties: list[DiscoveryProperty] = Field(
        default_factory=list,
        # A map keyed by name: the API server refuses a duplicate name without a CEL rule.
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
    )
    """Named values (possibly secret) sent to the handler alongside the details."""

    @field_validator("name")
    @classmethod
    def _handler_name(cls, name: str) -> str:
        if not re.match(HANDLER_NAME_PATTERN, name):
            raise ValueError(HANDLER_NAME_MESSAGE)
        return name

    @field_validator("discovery_properties")
    @classmethod
    def _unique_properties(cls, properties: list[DiscoveryProperty]) -> list[DiscoveryProperty]:
        if len({p.name for p in properties}) < len(properties):
            raise ValueError(UNIQUE_PROPERTIES_MESSAGE)
        return properties


class BrokerSpec(ExactlyOne):
    """The workload deployed for each discovered device."""

    one_of = ("broker_pod_spec", "broker_job_spec")
    broker_pod_spec: dict[str, Any] | None = None
    """A PodSpec run on every node that sees the device."""
    broker_job_spec: dict[str, Any] | None = None
    """A JobSpec run once per device."""


class ConfigurationSpec(WireModel):
    """What to discover and how the discovered devices are offered to pods."""

    discovery_handler: DiscoveryHandlerInfo
    """The discovery handler and its settings."""
    capacity: int = Field(default=1, ge=1, le=MAX_CAPACITY)
    """How many pods may use one device at the same time, cluster-wide."""
    unique_devices: bool = True
    """Whether a pod asking for N devices of this Configuration gets N distinct devices."""
    broker_spec: BrokerSpec | None = None
    """Workload deployed for each device; none when pods request devices themselves."""
    instance_service_spec: dict[str, Any] | None = None
    """A ServiceSpec for one Service per device, selecting its brokers."""
    configuration_service_spec: dict[str, Any] | None = None
    """A ServiceSpec for one Service selecting the brokers of all devices."""
    broker_properties: dict[str, str] = Field(default_factory=dict)
    """Extra environment for brokers, added to every device's properties (winning on a clash)."""


class ConfigurationStatus(WireModel):
    """What the agents and the controller observed, so `kubectl describe` tells why."""

    observed_generation: int | None = Field(default=None, ge=0)
    """metadata.generation of the spec this status describes."""
    instance_count: int = Field(default=0, ge=0)
    """Number of Instances (discovered devices) of this Configuration."""
    conditions: list[Condition] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
    )
    """Current observations, at most one per type, computed from `nodes` (and the controller's)."""
    nodes: list[NodeReport] = Field(
        default_factory=list,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["node"]},
    )
    """One row per node that runs the Configuration: its problems, none when it discovers."""

    def condition(self, type: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type), None)


class Configuration(Resource):
    """Devices to discover with one discovery handler, and how they are shared and brokered."""

    plural: ClassVar[str] = "configurations"
    # Refused at admission, not only later by the agents (an InvalidName condition).
    object_rules: ClassVar[tuple[tuple[str, str], ...]] = (
        (
            f"size(self.metadata.name) <= {MAX_CONFIGURATION_NAME}",
            f"a Configuration name is at most {MAX_CONFIGURATION_NAME} characters: its "
            f"Instances are named <name>-<{DIGEST_HEX_LENGTH} hex digits> and advertised as "
            f"akri.sh/<Instance name>, at most {MAX_RESOURCE_NAME_PART} characters",
        ),
    )
    kind: Literal["Configuration"] = "Configuration"
    spec: ConfigurationSpec
    status: ConfigurationStatus | None = None
