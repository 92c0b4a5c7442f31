"""Pure: an Instance as DRA devices, and a Configuration as its DeviceClass (docs/design.md §8a).

`uniqueDevices: true`: one device per Instance that several claims may share
(`allowMultipleAllocations`) until its consumable capacity `akri.sh/slots` (= `capacity`, one
slot per allocation by default) is used up, so N devices of a request are N distinct Instances.
`uniqueDevices: false`: `capacity` single-allocation devices per Instance, one per slot, named as
the slot ids of docs/design.md §4, so one request may take several slots of one Instance.

Limits are those of `resource.k8s.io/v1` (k8s.io/api/resource/v1/types.go): attribute and
capacity names are C identifiers of at most 32 characters in the driver's domain, string values
at most 64 characters, at most 32 attributes and capacities per device.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from akri.api import Configuration, Instance, InstanceConditionType
from akri.naming import GROUP, dns_label, resource_name, slot_id, slot_index

JSON = dict[str, Any]

DRIVER = GROUP
"""The DRA driver name of every akri-py device."""
API_VERSION = "resource.k8s.io/v1"
SLOTS = "slots"
"""The consumable capacity of a shared device, `akri.sh/slots` (the driver's domain)."""
OFFLINE_TAINT = f"{GROUP}/offline"
"""Device taint of a device its node has lost but whose Instance still exists."""
OVER_CAPACITY_TAINT = f"{GROUP}/over-capacity"
"""Device taint of the slots of an Instance whose claims hold more than its capacity."""
ATTRIBUTE_CONFIGURATION = "configuration"
ATTRIBUTE_HANDLER = "handler"
ATTRIBUTE_INSTANCE = "instance"
MAX_ID_LENGTH = 32  # resourceapi.DeviceMaxIDLength
MAX_VALUE_LENGTH = 64  # resourceapi.DeviceAttributeMaxValueLength
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice
HOSTNAME_LABEL = "kubernetes.io/hostname"
"""The node label the kubelet sets to its hostname, which shared devices select nodes by."""

_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_OWN_ATTRIBUTES = (ATTRIBUTE_CONFIGURATION, ATTRIBUTE_HANDLER, ATTRIBUTE_INSTANCE)


def device_class_name(configuration: str) -> str:
    """The DeviceClass of a Configuration's devices: `<configuration>.akri.sh`."""
    return f"{configuration}.{GROUP}"


def class_selector(configuration: str) -> str:
    """CEL selecting the devices of one Configuration."""
    return (
        f'device.driver == "{DRIVER}" && '
        f'device.attributes["{DRIVER}"].{ATTRIBUTE_CONFIGURATION} == "{configuration}"'
    )


def instance_selector(instance: str) -> str:
    """CEL selecting the device(s) of one Instance, for per-Instance ResourceClaims."""
    return f'device.attributes["{DRIVER}"].{ATTRIBUTE_INSTANCE} == "{instance}"'


REQUEST = "slot"
"""The request of a per-Instance claim template: one slot of the Instance."""


def instance_claim_template(instance: Instance, labels: dict[str, str]) -> JSON:
    """The ResourceClaimTemplate named as `instance`, in its namespace and owned by it: each
    claim made from it takes one slot of the Instance, the DRA form of `akri.sh/<instance>: 1`.
    Broker pods name it once per slot they need (docs/design.md §8a)."""
    name = instance.metadata.name or ""
    request = {
        "name": REQUEST,
        "exactly": {
            "deviceClassName": device_class_name(instance.spec.configuration_name),
            "selectors": [{"cel": {"expression": instance_selector(name)}}],
            "allocationMode": "ExactCount",
            "count": 1,
        },
    }
    owner = instance.owner_reference().model_dump(by_alias=True, exclude_none=True)
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {
            "name": name,
            "namespace": instance.metadata.namespace or "default",
            "labels": dict(labels),
            "ownerReferences": [owner],
        },
        "spec": {
            "metadata": {"labels": dict(labels)},
            "spec": {"devices": {"requests": [request]}},
        },
    }


def device_class(configuration: Configuration, labels: dict[str, str]) -> JSON:
    """The DeviceClass that turns `akri.sh/<configuration>: N` pod limits into claims.

    Cluster-scoped, so it cannot be owned by the namespaced Configuration: the controller
    deletes it with the Configuration, finding it by `labels`.
    """
    name = configuration.metadata.name or ""
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": device_class_name(name), "labels": dict(labels)},
        "spec": {
            "selectors": [{"cel": {"expression": class_selector(name)}}],
            "extendedResourceName": resource_name(name),
        },
    }


@dataclass
class Devices:
    """The devices of one Instance and the broker properties that could not be attributes."""

    devices: list[JSON] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def property_attribute_problem(name: str, value: str) -> str | None:
    """Why a broker property cannot be a device attribute, or None when it can."""
    if not _C_IDENTIFIER.match(name) or len(name) > MAX_ID_LENGTH:
        return f"{name!r} is not a C identifier of at most {MAX_ID_LENGTH} characters"
    if name in _OWN_ATTRIBUTES:
        return f"{name!r} is an attribute of akri-py itself"
    if len(value) > MAX_VALUE_LENGTH:
        return f"the value of {name!r} is over {MAX_VALUE_LENGTH} characters"
    return None


def _attributes(instance: Instance, handler: str, skipped: list[str]) -> JSON:
    attributes: JSON = {
        ATTRIBUTE_CONFIGURATION: {"string": instance.spec.configuration_name},
        ATTRIBUTE_HANDLER: {"string": handler},
        ATTRIBUTE_INSTANCE: {"string": instance.metadata.name},
    }
    room = MAX_ATTRIBUTES_AND_CAPACITIES - len(attributes) - 1  # one capacity at most
    for name, value in sorted(instance.spec.broker_properties.items()):
        problem = property_attribute_problem(name, value)
        if problem is None and room == 0:
            problem = f"{name!r} is over the limit of attributes per device"
        if problem is not None:
            skipped.append(problem)
            continue
        attributes[name] = {"string": value}
        room -= 1
    return attributes


def node_selector(nodes: Iterable[str], hostnames: Mapping[str, str]) -> JSON:
    """A device's node selector matching `nodes`, by their `kubernetes.io/hostname` label.

    The two other ways of naming several nodes fail on a real cluster (checked on 1.36):
    kube-apiserver refuses a `metadata.name` field requirement with more than one value, and
    the scheduler cannot allocate a device whose selector has several terms ("unsupported
    ResourceSlice.NodeSelector with 2 terms": createNodeSelector ANDs the requirements of a
    claim's devices into one term). `hostnames` maps a node name to its label where the
    cluster knows it; the kubelet sets the label to the node's name unless given another
    hostname.
    """
    values = sorted({hostnames.get(node, node) for node in nodes})
    term = {"key": HOSTNAME_LABEL, "operator": "In", "values": values}
    return {"nodeSelectorTerms": [{"matchExpressions": [term]}]}


def offline_nodes(instance: Instance) -> set[str]:
    """Nodes in `nodes` whose row of the Instance's status says `DeviceOffline`: they no
    longer discover the device and leave `nodes` unless it comes back within the grace."""
    rows = instance.status.nodes if instance.status is not None else []
    offline = InstanceConditionType.DEVICE_OFFLINE
    reported = {row.node for row in rows if any(p.type == offline for p in row.problems)}
    return reported & set(instance.spec.nodes)


def allocation_results(claim: JSON) -> list[JSON]:
    """The allocation results of a ResourceClaim that name akri.sh devices."""
    devices = ((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}
    return [r for r in devices.get("results") or [] if r.get("driver") == DRIVER]


def allocated_devices(claims: Iterable[JSON], pool: str) -> set[str]:
    """Names of the akri.sh devices of `pool` that `claims` are allocated."""
    return {
        str(result["device"])
        for claim in claims
        for result in allocation_results(claim)
        if result.get("pool") == pool
    }


def held_slots(instance: str, allocated: Collection[str]) -> set[int]:
    """Indexes of the slots of `instance` among the `allocated` device names."""
    return {i for name in allocated if (i := slot_index(instance, name)) is not None}


def offered_slots(capacity: int, held: Collection[int]) -> list[int]:
    """Indexes of the slot devices an Instance with `uniqueDevices: false` publishes.

    The allocator counts only the devices a slice offers, so after `capacity` is lowered under
    the slots claims hold, offering slots `0..capacity-1` would let it grant them on top of a
    held slot past the new capacity. Every held slot stays offered (its claim keeps it) and
    free slots below the capacity are offered only as far as room is left:
    `max(capacity, held)` devices (docs/design.md §5.5). With nothing held past the capacity
    this is `0..capacity-1`. While more are held than the capacity, the devices are tainted
    (`OVER_CAPACITY_TAINT`): a slot its claim frees is then not free for the allocator in the
    slice it already has, before the next publish withdraws it.
    """
    room = capacity - len(held)
    free = [i for i in range(capacity) if i not in held][: max(room, 0)]
    return sorted(set(held) | set(free))


def instance_devices(
    instance: Instance,
    *,
    handler: str,
    unique: bool,
    per_device_nodes: bool,
    offline: bool = False,
    allocated: Collection[str] = (),
    hostnames: Mapping[str, str] | None = None,
) -> Devices:
    """The DRA devices of `instance`.

    `per_device_nodes`: the device is in a pool shared by several nodes and carries its own
    node selector (`Instance.spec.nodes`, by the `hostnames` of `node_selector`); an Instance
    that no node sees has no device then.
    `offline`: nothing new may be allocated on the device, but pods using it keep running: it
    is tainted NoSchedule, which the allocator honours and the kubelet does not act on.
    `allocated`: the device names of the pool that claims hold (`offered_slots`).
    """
    result = Devices()
    nodes = instance.spec.nodes
    if per_device_nodes and not nodes:
        return result
    attributes = _attributes(instance, handler, result.skipped)
    common: JSON = {"attributes": attributes}
    if per_device_nodes:
        common["nodeSelector"] = node_selector(nodes, hostnames or {})
    if offline:
        common["taints"] = [{"key": OFFLINE_TAINT, "effect": "NoSchedule"}]
    name = instance.metadata.name or ""
    capacity = instance.spec.capacity
    if unique:
        slots = {
            "value": str(capacity),
            "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}},
        }
        result.devices.append(
            {
                "name": dns_label(name),
                **common,
                "capacity": {SLOTS: slots},
                "allowMultipleAllocations": True,
            }
        )
    else:
        held = held_slots(name, allocated)
        if len(held) > capacity:
            taint = {"key": OVER_CAPACITY_TAINT, "effect": "NoSchedule"}
            common["taints"] = [*common.get("taints", []), taint]
        result.devices.extend(
            {"name": dns_label(slot_id(name, i)), **common} for i in offered_slots(capacity, held)
        )
    return result


def published_devices(
    instance: Instance,
    configuration: Configuration,
    *,
    per_device_nodes: bool,
    allocated: Collection[str] = (),
    hostnames: Mapping[str, str] | None = None,
) -> Devices:
    """The devices of `instance` as its Configuration has them published (docs/design.md
    §8a). Nodes that report the device offline leave its node selection at once while others
    still see it; when every node does, or the Instance is being deleted, it keeps its nodes
    and is tainted, so no new claim gets it while the pods using it run on. A node whose
    offline grace runs out leaves `nodes`, and the device goes with the last one."""
    offline = offline_nodes(instance)
    online = [node for node in instance.spec.nodes if node not in offline]
    if online and offline:
        spec = instance.spec.model_copy(update={"nodes": online})
        instance = instance.model_copy(update={"spec": spec})
    return instance_devices(
        instance,
        handler=configuration.spec.discovery_handler.name,
        unique=configuration.spec.unique_devices,
        per_device_nodes=per_device_nodes,
        offline=instance.metadata.deletion_timestamp is not None or not online,
        allocated=allocated,
        hostnames=hostnames,
    )
