"""Between the Instance resource and the slot-pool engine: read its view, write its decision.

Pure: `akri.slots` decides on plain data; this turns an API Instance into that data and the
engine's answer back into the Instance to write, so every writer derives both the same way.
"""

from __future__ import annotations

import weakref
from collections.abc import Collection, Mapping

from akri import slots
from akri.api.instance import Instance

_views: dict[int, tuple[weakref.ref[Instance], slots.SlotPool]] = {}


def view(instance: Instance) -> slots.SlotPool:
    """What the engine needs of `instance`, made once per Instance object.

    ListAndWatch and Allocate ask for the views of the same cached Instances again and again;
    reusing one keeps the engine's cached properties (slots, grantable) between calls. Sound
    because Instances are never changed in place: every change is a `model_copy`.
    """
    key = id(instance)
    known = _views.get(key)
    if known is not None and known[0]() is instance:
        return known[1]
    spec = instance.spec
    made = slots.SlotPool(
        name=instance.metadata.name or "",
        configuration=spec.configuration_name,
        capacity=spec.capacity,
        nodes=tuple(spec.nodes),
        usage=dict(spec.device_usage),
        terminating=instance.metadata.deletion_timestamp is not None,
    )
    _views[key] = (weakref.ref(instance, lambda _: _views.pop(key, None)), made)
    return made


def with_usage(instance: Instance, usage: Mapping[str, str]) -> Instance | None:
    """`instance` with `usage` as its deviceUsage, or None when that changes nothing."""
    if dict(usage) == instance.spec.device_usage:
        return None
    spec = instance.spec.model_copy(update={"device_usage": dict(usage)})
    return instance.model_copy(update={"spec": spec})


def released(instance: Instance, node: str, only: Collection[slots.Holding]) -> Instance | None:
    """`instance` without the holdings of `node` in `only`, or None when it holds none of them."""
    return with_usage(instance, slots.release(view(instance), node, only).usage)


def protected(instance: Instance) -> Instance:
    """`instance` with the slots finalizer exactly while a node holds one of its slots.

    Every Instance the agent writes passes through here, so an Instance whose slots are in use
    cannot vanish with its record (docs/design.md §5.5).
    """
    current = instance.metadata.finalizers
    wanted = slots.finalizers(view(instance), current)
    if wanted == current:
        return instance
    metadata = instance.metadata.model_copy(update={"finalizers": wanted})
    return instance.model_copy(update={"metadata": metadata})
