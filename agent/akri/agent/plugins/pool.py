"""Between the Instance resource and the slot-pool engine: read its view, write its decision.

Pure: `akri.slots` decides on plain data; this turns an API Instance into that data and the
engine's answer back into the Instance to write, so every writer derives both the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from akri import slots
from akri.api import Instance


def view(instance: Instance) -> slots.Instance:
    """What the engine needs of `instance`."""
    spec = instance.spec
    return slots.Instance(
        name=instance.metadata.name or "",
        configuration=spec.configuration_name,
        capacity=spec.capacity,
        nodes=tuple(spec.nodes),
        usage=dict(spec.device_usage),
    )


def with_usage(instance: Instance, usage: Mapping[str, str]) -> Instance | None:
    """`instance` with `usage` as its deviceUsage, or None when that changes nothing."""
    if dict(usage) == instance.spec.device_usage:
        return None
    spec = instance.spec.model_copy(update={"device_usage": dict(usage)})
    return instance.model_copy(update={"spec": spec})


def released(instance: Instance, node: str, only: Collection[slots.Holding]) -> Instance | None:
    """`instance` without the holdings of `node` in `only`, or None when it holds none of them."""
    return with_usage(instance, slots.release(view(instance), node, only).usage)
