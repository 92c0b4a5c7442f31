"""Between the Instance resource and the slot-pool engine: read its view, write its decision.

Pure: `akri.slots` decides on plain data; this turns an API Instance into that data and the
engine's answer back into the Instance to write, so every writer derives both the same way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from akri import slots
from akri.api.instance import Instance, InstanceSpec
from akri.api.wire import ObjectMeta

_VIEW = "_akri_slot_pool"
"""Where an Instance keeps its view: a key of its `__dict__` that is no field, so pydantic's
validation, serialization, `repr` and `==` ignore it (as they do a `cached_property`)."""


@dataclass(frozen=True)
class _View:
    """A view and the parts of the Instance it was made from."""

    spec: InstanceSpec
    metadata: ObjectMeta
    pool: slots.SlotPool

    def made_from(self, instance: Instance) -> bool:
        return self.spec is instance.spec and self.metadata is instance.metadata


def view(instance: Instance) -> slots.SlotPool:
    """What the engine needs of `instance`, made once and kept on the Instance object.

    ListAndWatch and Allocate ask for the views of the same cached Instances again and again;
    reusing one keeps the engine's cached properties (slots, grantable) between calls. Instances
    are never changed in place: every change is a `model_copy` with a new `spec` or `metadata`.
    A copy carries the kept view along (pydantic copies `__dict__`), so a view is used only
    while both are the very objects it was made from.
    """
    kept = instance.__dict__.get(_VIEW)
    if isinstance(kept, _View) and kept.made_from(instance):
        return kept.pool
    spec, metadata = instance.spec, instance.metadata
    made = slots.SlotPool(
        name=metadata.name or "",
        configuration=spec.configuration_name,
        capacity=spec.capacity,
        nodes=tuple(spec.nodes),
        usage=dict(spec.device_usage),
        terminating=metadata.deletion_timestamp is not None,
    )
    instance.__dict__[_VIEW] = _View(spec, metadata, made)
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
