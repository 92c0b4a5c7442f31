"""Pure: keep `deviceUsage` and what this node's containers use in agreement (docs/design.md §5.5).

A slot belongs to the container that uses it. The kubelet's PodResources says which devices
the running containers of a node use; `deviceUsage` is only the record of it. The two are
brought together both ways, by the node itself (only it can see its containers):

- a holding recorded for this node that no container has used for the grace period is stale
  and gets freed (`stale_holdings`);
- a device a container uses that the record lost (a hand edit, an Instance deleted and made
  again, a bug) is recorded again when its slot is free, and reported as a conflict when the
  record gives the slot to another holder (`sync`). The other holder is never overruled:
  which of the two is right is for a person to decide.

An instance-level device names its slot (`<instance>-<i>`). A configuration-level virtual
device is bound to a slot only in `deviceUsage`, so the node also remembers its bindings (the
`remembered` map) to find a lost one's slot again.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from akri.naming import resource_name, slot_id, slot_index
from akri.slots import (
    FREE,
    ConfigurationHolder,
    Holder,
    Holding,
    NodeHolder,
    SlotPool,
)


@dataclass(frozen=True, order=True)
class SlotRef:
    """One slot: its Instance's name and index."""

    instance: str
    index: int

    def __str__(self) -> str:
        return slot_id(self.instance, self.index)


@dataclass(frozen=True, order=True)
class User:
    """A container that uses a device, as PodResources names it."""

    namespace: str
    pod: str
    container: str

    def __str__(self) -> str:
        return f"container {self.container} of pod {self.namespace}/{self.pod}"


Uses = Mapping[Holding, Collection[User]]
"""Every device the node's containers use, with the containers using it."""


def recorded(instances: Iterable[SlotPool], node: str) -> dict[Holding, SlotRef]:
    """Where `deviceUsage` records each holding of `node` now."""
    return {
        holding: SlotRef(instance.name, index)
        for instance in instances
        for index, holding in instance.held_by(node).items()
    }


@dataclass(frozen=True)
class Conflict:
    """A container of this node uses a slot that `deviceUsage` gives to another holder."""

    holding: Holding
    slot: SlotRef
    holder: Holder
    users: tuple[User, ...]

    @property
    def problem(self) -> str:
        """The conflict without naming its users (an Event on a user's pod names it)."""
        return (
            f"slot {self.slot} (as {self.holding.device} of {self.holding.resource}) is in use, "
            f"but deviceUsage says it is {self.holder}"
        )

    def __str__(self) -> str:
        return f"{', '.join(map(str, self.users))}: {self.problem}"


@dataclass(frozen=True)
class Sync:
    """What to do so that `deviceUsage` records every device this node's containers use."""

    record: dict[str, dict[int, Holder]] = field(default_factory=dict)
    """Per Instance, free slots to record for this node again."""
    conflicts: list[Conflict] = field(default_factory=list)
    """Devices in use whose slot the record gives to another holder."""
    unknown: list[Holding] = field(default_factory=list)
    """Devices in use that nothing records and whose slot is not known (or whose Instance is
    gone): they can only be reported."""


def _slot_of(
    holding: Holding, pool: Mapping[str, SlotPool], remembered: Mapping[Holding, SlotRef]
) -> SlotRef | None:
    """The slot a device in use stands for: as remembered, or as an instance-level id names it."""
    known = remembered.get(holding)
    if known is not None and known.instance in pool:
        return known
    for instance in pool.values():
        if holding.resource == resource_name(instance.name):
            index = slot_index(instance.name, holding.device)
            return None if index is None else SlotRef(instance.name, index)
    return None


def _holder(holding: Holding, instance: SlotPool, slot: SlotRef, node: str) -> Holder | None:
    """How `deviceUsage` writes `holding` of `node` into `slot`; None when it cannot."""
    if holding.resource == resource_name(instance.name):
        return NodeHolder(node) if holding.device == str(slot) else None
    if holding.resource == resource_name(instance.configuration):
        try:
            return ConfigurationHolder(holding.device, node)
        except ValueError:  # an id the record cannot hold; no plugin of ours hands those out
            return None
    return None


def sync(
    instances: Iterable[SlotPool],
    node: str,
    uses: Uses,
    remembered: Mapping[Holding, SlotRef],
) -> Sync:
    """Compare the devices this node's containers use with what `instances` record.

    Deterministic: holdings are taken in sorted order, so two devices claiming one free slot
    (possible only after hand edits) always resolve the same way, the second as a conflict.
    """
    pool = {i.name: i for i in sorted(instances, key=lambda i: i.name)}
    known = recorded(pool.values(), node)
    result = Sync()
    for holding in sorted(uses, key=lambda h: (h.resource, h.device)):
        if holding in known:
            continue
        slot = _slot_of(holding, pool, remembered)
        holder = None if slot is None else _holder(holding, pool[slot.instance], slot, node)
        if slot is None or holder is None:
            result.unknown.append(holding)
            continue
        decided = result.record.setdefault(slot.instance, {})
        current = decided.get(slot.index) or pool[slot.instance].slots.get(slot.index, FREE)
        if current == FREE:
            decided[slot.index] = holder
        else:
            result.conflicts.append(Conflict(holding, slot, current, tuple(sorted(uses[holding]))))
        if not decided:
            del result.record[slot.instance]
    return result


def stale_holdings(
    held: Iterable[Holding],
    in_use: Collection[Holding],
    unused_since: Mapping[Holding, float],
    now: float,
    grace: float,
) -> tuple[set[Holding], dict[Holding, float]]:
    """Which of this node's holdings to free, given what the kubelet reports in use.

    A holding is stale once no container has used it for `grace` seconds. Returns the stale ones
    and the new "unused since" map: use resets a timer, and holdings no longer held drop out.
    Stale ones stay in the map so a failed release is retried at once.
    """
    since = {h: unused_since.get(h, now) for h in held if h not in in_use}
    return {h for h, t in since.items() if now - t >= grace}, since


PodKey = tuple[str, str]
"""(namespace, name) of a pod."""


def pods_of(users: Iterable[User]) -> set[PodKey]:
    return {(user.namespace, user.pod) for user in users}


@dataclass(frozen=True)
class Sighting:
    """The containers PodResources last listed using a holding, and when that List was sent."""

    users: frozenset[User]
    at: float


def ended_holdings(
    held: Iterable[Holding],
    in_use: Collection[Holding],
    last_seen: Mapping[Holding, Sighting],
    ended: Collection[PodKey],
    granted: Mapping[Holding, float],
) -> set[Holding]:
    """This node's holdings to free at once, before the grace: seen in use, unused now, not
    granted since that List was sent, and every pod that used them is over (gone from the API,
    or Succeeded or Failed): no container of theirs runs, and no other can hold the slot.

    The grace stays for the rest: a holding never seen in use (its Allocate may be in flight,
    the kubelet not listing the container yet), one granted again since (a new container may
    hold it), and one whose pods still exist (a restarted kubelet lists no pods at first).
    """
    return {
        holding
        for holding in held
        if holding not in in_use
        and (seen := last_seen.get(holding)) is not None
        and granted.get(holding, float("-inf")) < seen.at
        and pods_of(seen.users) <= set(ended)
    }
