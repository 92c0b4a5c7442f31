"""Pure: which Instances this node creates, joins or leaves for one Configuration's devices.

The publisher feeds in the merged device list and the cached Instances and writes what comes
out; `joined` and `left` are also the guarded writes' mutations, so a conflict re-decides on the
fresh Instance. Rules (docs/design.md §3, §6):

- A shared device is one Instance cluster-wide that every node seeing it lists in `nodes`; a
  local device is one Instance per node.
- Capacity follows the Configuration; free slot keys follow the capacity, held ones stay until
  released (the slot pool ignores keys past capacity).
- brokerProperties are device properties plus the Configuration's (which win). Nodes may see a
  shared device with different properties, so only one node writes them: the first in sorted
  `nodes`. Without that rule two nodes would overwrite each other forever.
- An Instance being deleted, or owned by an earlier Configuration of the same name, is left to
  the garbage collector: joining it would resurrect nothing and fight the deletion.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from akri import slots
from akri.agent.plugins.response import MAX_ENV_VALUE_BYTES
from akri.api import Configuration, Instance, new_instance
from akri.api.pool import view
from akri.discovery.model import Device
from akri.naming import instance_name, is_env_name, slot_id

MAX_PROPERTY_VALUE_BYTES = MAX_ENV_VALUE_BYTES
"""Larger device property values are dropped: Allocate would drop them anyway, and a few huge
values would bloat every Instance write and watch event."""
MAX_PROPERTIES_BYTES = 256 * 1024
"""Properties past this many bytes (keys and values, in key order) are dropped: the API refuses
objects over 1.5 MiB, and a device that can never be written would be retried forever."""


@dataclass(frozen=True)
class Filtered:
    properties: dict[str, str]
    problems: list[str] = field(default_factory=list)
    """What was dropped or will not become an env var, for the log (once each)."""


def usable_properties(device: Device) -> Filtered:
    """The device's properties an Instance may carry, and what is wrong with the others."""
    kept: dict[str, str] = {}
    problems = []
    total = 0
    for key in sorted(device.properties):
        value = device.properties[key]
        size = len(value.encode())
        if size > MAX_PROPERTY_VALUE_BYTES:
            problems.append(
                f"device {device.id!r}: property {key!r} dropped, its value has {size} bytes "
                f"(limit {MAX_PROPERTY_VALUE_BYTES})"
            )
            continue
        total += size + len(key.encode())
        if total > MAX_PROPERTIES_BYTES:
            problems.append(
                f"device {device.id!r}: property {key!r} and those after it dropped: the "
                f"properties pass {MAX_PROPERTIES_BYTES} bytes in all"
            )
            break
        if not is_env_name(key):
            problems.append(
                f"device {device.id!r}: property {key!r} is not an env var name; "
                "containers will not receive it"
            )
        kept[key] = value
    return Filtered(kept, problems)


@dataclass(frozen=True)
class Wanted:
    """An Instance this node should be in, as its current devices describe it."""

    name: str
    device: Device
    properties: dict[str, str]
    """brokerProperties: usable device properties, then the Configuration's."""


def wanted_instances(
    configuration: Configuration, node: str, shared: bool, devices: Iterable[Device]
) -> tuple[dict[str, Wanted], list[str]]:
    """Instances by name for the devices seen now, and the problems found.

    Names carry only 6 hex digits of the device id's digest (Akri's format), so two devices
    can get one name; the one with the smaller id is published, whatever the order they came
    in, and the other is reported.
    """
    name = configuration.metadata.name or ""
    by_name: dict[str, Device] = {}
    problems: list[str] = []
    for device in devices:
        instance = instance_name(name, device.id, None if shared else node)
        known = by_name.get(instance)
        if known is not None and known.id != device.id:
            kept, dropped = sorted((known, device), key=lambda d: d.id)
            problems.append(
                f"devices {kept.id!r} and {dropped.id!r} both get the Instance name "
                f"{instance}; only {kept.id!r} is published"
            )
            device = kept
        by_name[instance] = device
    wanted: dict[str, Wanted] = {}
    for instance, device in by_name.items():
        filtered = usable_properties(device)
        problems.extend(filtered.problems)
        properties = {**filtered.properties, **configuration.spec.broker_properties}
        wanted[instance] = Wanted(instance, device, properties)
    return wanted, problems


def belongs(instance: Instance, configuration: Configuration) -> bool:
    """Whether `instance` is a live Instance of exactly this Configuration (not an older one)."""
    uid = configuration.metadata.uid
    return instance.metadata.deletion_timestamp is None and any(
        owner.uid == uid for owner in instance.metadata.owner_references
    )


def _resized_usage(name: str, usage: Mapping[str, str], capacity: int) -> dict[str, str]:
    """A key per slot below capacity; keys past it are dropped once free (held ones stay)."""
    below = {slot_id(name, i): "" for i in range(capacity)}
    return below | {key: holder for key, holder in usage.items() if holder or key in below}


def _usage_settled(instance: Instance) -> bool:
    """Whether `deviceUsage` has the keys the Instance's own capacity asks for: which slots are
    held matters only past the capacity (free keys there are dropped), not who holds them."""
    spec = instance.spec
    return view(instance).keys_follow_capacity or spec.device_usage == _resized_usage(
        instance.metadata.name or "", spec.device_usage, spec.capacity
    )


def planning_key(instance: Instance) -> tuple[object, ...]:
    """All that `plan` reads of `instance` besides its name: Instances with equal keys (and
    names) give every node equal plans, so a change that keeps the key, such as a slot taken
    or released below capacity, needs no new plan (tests/agent/test_planning_key.py)."""
    metadata, spec = instance.metadata, instance.spec
    return (
        metadata.deletion_timestamp is None,
        tuple(owner.uid for owner in metadata.owner_references),
        tuple(spec.nodes),
        spec.shared,
        spec.capacity,
        spec.broker_properties,
        _usage_settled(instance),
    )


def joined(
    instance: Instance, configuration: Configuration, node: str, properties: Mapping[str, str]
) -> Instance | None:
    """`instance` listing `node` and following the Configuration; None when nothing changes."""
    if not belongs(instance, configuration):
        return None
    spec = instance.spec
    nodes = spec.nodes if node in spec.nodes else [*spec.nodes, node]
    capacity = configuration.spec.capacity
    writes_properties = min(nodes) == node
    if (
        node in spec.nodes
        and spec.capacity == capacity
        and (not writes_properties or spec.broker_properties == properties)
        and _usage_settled(instance)
    ):
        return None
    updated = spec.model_copy(
        update={
            "nodes": nodes,
            "capacity": capacity,
            "device_usage": _resized_usage(
                instance.metadata.name or "", spec.device_usage, capacity
            ),
            "broker_properties": dict(properties) if writes_properties else spec.broker_properties,
        }
    )
    return instance.model_copy(update={"spec": updated})


@dataclass(frozen=True)
class Delete:
    """Leaving would leave nothing to keep: delete the Instance if it is still at this version."""

    resource_version: str


def left(instance: Instance, node: str) -> Instance | Delete | None:
    """`instance` without `node` in `nodes`; Delete when then no node sees the device and no
    slot is held; None when `node` is not in it (or it is being deleted).

    The slots `node` holds stay: they belong to its running containers, which a device gone
    offline does not stop (docs/design.md §5.5). The reclaimer frees them once unused, and
    an Instance kept only for them is deleted then.
    """
    if node not in instance.spec.nodes or instance.metadata.deletion_timestamp is not None:
        return None
    after = slots.leave(view(instance), node)
    if slots.disposable(after):
        return Delete(instance.metadata.resource_version or "")
    spec = instance.spec.model_copy(update={"nodes": list(after.nodes)})
    return instance.model_copy(update={"spec": spec})


@dataclass(frozen=True)
class Plan:
    """What to write for one Configuration now; empty when everything is as it should be."""

    create: list[Instance] = field(default_factory=list)
    join: list[Wanted] = field(default_factory=list)
    """Existing Instances this node must join or bring up to date."""
    leave: list[str] = field(default_factory=list)
    """Local Instances whose device is gone: leave at once."""
    missing: list[str] = field(default_factory=list)
    """Shared Instances whose device is gone: leave once the offline grace has passed."""

    def __bool__(self) -> bool:
        return bool(self.create or self.join or self.leave or self.missing)


def plan(
    configuration: Configuration,
    node: str,
    shared: bool,
    wanted: Mapping[str, Wanted],
    instances: Iterable[Instance],
) -> Plan:
    """Compare the devices seen now with the cached Instances of the Configuration."""
    named = [(i.metadata.name, i) for i in instances if i.metadata.name]
    existing = {name: i for name, i in named if belongs(i, configuration)}
    blocked = {name for name, _ in named} - existing.keys()
    result = Plan()
    for name, want in sorted(wanted.items()):
        current = existing.get(name)
        if current is None:
            if name not in blocked:  # an old or dying Instance of that name must go first
                result.create.append(
                    new_instance(
                        configuration,
                        want.device.id,
                        node,
                        shared=shared,
                        properties=want.properties,
                    )
                )
        elif joined(current, configuration, node, want.properties) is not None:
            result.join.append(want)
    for name, instance in sorted(existing.items()):
        if name in wanted or node not in instance.spec.nodes:
            continue
        (result.missing if instance.spec.shared else result.leave).append(name)
    return result
