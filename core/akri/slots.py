"""The capacity slot pool that instance- and configuration-level plugins share (docs/design.md §5).

Pure decisions over plain data, no I/O: callers read Instances, ask here, and write the returned
`deviceUsage` (and `nodes`) under a resourceVersion precondition. On a conflict they re-read and
ask again, so every answer depends only on the arguments, and re-running an allocation after a
partial write converges: a device this node already holds is accepted as it is.
"""

from __future__ import annotations

import zlib
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from types import MappingProxyType

from akri.naming import (
    SLOTS_FINALIZER,
    configuration_level_device_id,
    configuration_level_device_index,
    resource_name,
    slot_id,
    slot_ids,
    slot_index,
)

_CONFIGURATION_LEVEL_TAG = "C"


class AllocationError(Exception):
    """An Allocate that cannot be met; nothing was decided, so there is nothing to undo."""


@dataclass(frozen=True)
class Free:
    """A slot nobody holds: the value `""` or an absent key."""

    def __str__(self) -> str:
        return "free"


@dataclass(frozen=True)
class NodeHolder:
    """Held by `node` through the instance-level resource; written as `<node>`."""

    node: str

    def __post_init__(self) -> None:
        _check_part("node", self.node)

    def __str__(self) -> str:
        return f"held by node {self.node}"


@dataclass(frozen=True)
class ConfigurationHolder:
    """Held by `node` through the configuration-level resource as `vdev`: `C:<vdev>:<node>`."""

    vdev: str
    node: str

    def __post_init__(self) -> None:
        _check_part("virtual device", self.vdev)
        _check_part("node", self.node)

    def __str__(self) -> str:
        return f"held by node {self.node} as {self.vdev}"


@dataclass(frozen=True)
class Corrupt:
    """Any other value: nobody may use the slot, it counts as occupied, and it is worth logging."""

    raw: str

    def __str__(self) -> str:
        return f"corrupt ({self.raw!r})"


Holder = Free | NodeHolder | ConfigurationHolder | Corrupt
FREE = Free()


def _check_part(what: str, part: str) -> None:
    # Writing such a value would turn a slot corrupt for every reader, so refuse it at the source.
    if not part or ":" in part:
        raise ValueError(f"{what} {part!r} cannot be written to deviceUsage")


@lru_cache(maxsize=4096)
def parse_usage(value: str) -> Holder:
    """Read one `deviceUsage` value; never raises, whatever another writer left there.

    Holders are immutable, and every agent reads the same few values (its nodes' names) on
    every change of every Instance: each is parsed once."""
    if not value:
        return FREE
    parts = value.split(":")
    if len(parts) == 1:
        return NodeHolder(value)
    if len(parts) == 3 and parts[0] == _CONFIGURATION_LEVEL_TAG and parts[1] and parts[2]:
        return ConfigurationHolder(parts[1], parts[2])
    return Corrupt(value)


def format_usage(holder: Holder) -> str:
    """The `deviceUsage` value of `holder`; `parse_usage` reads it back unchanged."""
    match holder:
        case NodeHolder(node):
            return node
        case ConfigurationHolder(vdev, node):
            return f"{_CONFIGURATION_LEVEL_TAG}:{vdev}:{node}"
        case Corrupt(raw):
            return raw
    return ""


@dataclass(frozen=True)
class Holding:
    """A device held by a node, named as the kubelet names it (PodResources, ListAndWatch)."""

    resource: str  # `akri.sh/<instance>` or `akri.sh/<configuration>`
    device: str  # slot id or virtual device id


@dataclass(frozen=True)
class _Tally:
    """Counts over an Instance's slots; a copy with a few slots changed adds up the change."""

    held: int
    holders: int
    """Slots held by a node (corrupt ones are held by nobody)."""
    corrupt: int
    below_capacity: int
    """Slots with an index below capacity (each index once)."""
    free_past_capacity: int

    @classmethod
    def of(cls, capacity: int, slots: Iterable[tuple[int, Holder]]) -> _Tally:
        held = holders = corrupt = below = free_past = 0
        for index, holder in slots:
            if index < capacity:
                below += 1
            if isinstance(holder, Free):
                free_past += index >= capacity
                continue
            held += 1
            if isinstance(holder, Corrupt):
                corrupt += 1
            else:
                holders += 1
        return cls(held, holders, corrupt, below, free_past)

    def changed(self, before: _Tally, after: _Tally) -> _Tally:
        """These counts once slots counting `before` are replaced by ones counting `after`."""
        return _Tally(
            self.held - before.held + after.held,
            self.holders - before.holders + after.holders,
            self.corrupt - before.corrupt + after.corrupt,
            self.below_capacity - before.below_capacity + after.below_capacity,
            self.free_past_capacity - before.free_past_capacity + after.free_past_capacity,
        )


@dataclass(frozen=True)
class SlotPool:
    """The capacity slots of one Instance (one device) and who holds each, as its `deviceUsage`
    records them. Treat `usage` as immutable: derived views are cached."""

    name: str
    configuration: str
    capacity: int
    nodes: tuple[str, ...] = ()
    usage: Mapping[str, str] = field(default_factory=dict)
    terminating: bool = False
    """Being deleted: its slots stay with their holders, and none is granted any more."""

    @cached_property
    def slots(self) -> dict[int, Holder]:
        """Holder per slot key, even past `capacity` (a holder keeps it until released).

        Keys that are no slot id of this Instance are skipped: they cannot be granted or held.
        """
        known = _indices(self.name, self.capacity)
        found: dict[int, Holder] = {}
        for key, value in self.usage.items():
            index = known.get(key)
            if index is None:  # past capacity, or no slot of this Instance
                index = slot_index(self.name, key)
            if index is not None:
                found[index] = parse_usage(value)
        return found

    @cached_property
    def _tally(self) -> _Tally:
        """One pass over the slots for what every reader asks of each new Instance."""
        return _Tally.of(self.capacity, self.slots.items())

    @property
    def held(self) -> int:
        """Occupied slots at any index, corrupt ones included; new grants need `held < capacity`."""
        return self._tally.held

    @property
    def in_use(self) -> bool:
        """Whether some node holds a slot (corrupt values are no holder: nobody releases them)."""
        return self._tally.holders > 0

    @cached_property
    def reusable(self) -> bool:
        """Whether a node may give the slots it holds to new containers (a kubelet hands a
        device one container no longer uses to the next): not while the Instance is being
        deleted, nor while more slots are held than its capacity. A capacity lowered under
        running containers leaves them their slots, and none goes to a new container until
        releases bring the held slots down to the capacity."""
        return not self.terminating and self.held <= self.capacity

    @property
    def room(self) -> int:
        """How many more slots may be held now: none at or past capacity (slots past a lowered
        capacity still held) or while the Instance is being deleted."""
        return 0 if self.terminating else max(self.capacity - self.held, 0)

    @cached_property
    def grantable(self) -> tuple[int, ...]:
        """Free slots below capacity that may all be granted at once now, lowest first: `room`
        of them at most."""
        if not self.room:
            return ()
        slots = self.slots
        free = [i for i in range(self.capacity) if isinstance(slots.get(i, FREE), Free)]
        return tuple(free[: self.room])

    @cached_property
    def _held_by(self) -> dict[str, dict[int, Holding]]:
        """`held_by` of each node asked so far: the agent of every node asks on every change
        of the Instance, each for its own node."""
        return {}

    def held_by(self, node: str) -> Mapping[int, Holding]:
        """What `node` holds here, by slot index, lowest first (as the kubelet names it)."""
        known = self._held_by.get(node)
        if known is None:
            mine = [i for i, h in self.slots.items() if getattr(h, "node", None) == node]
            known = self._held_by[node] = {
                index: holding
                for index in sorted(mine)
                if (holding := self.holding(index, node)) is not None
            }
        return known

    @cached_property
    def keys_follow_capacity(self) -> bool:
        """Whether `deviceUsage` has a key for every slot below capacity and no other key but
        slots held past it: nothing to add or drop when the capacity is as it is."""
        tally = self._tally
        return (
            len(self.slots) == len(self.usage)
            and not tally.free_past_capacity
            and tally.below_capacity == self.capacity
        )

    def holding(self, index: int, node: str) -> Holding | None:
        """How the kubelet of `node` names slot `index`, or None when `node` does not hold it."""
        match self.slots.get(index, FREE):
            case NodeHolder(holder) if holder == node:
                return Holding(resource_name(self.name), slot_id(self.name, index))
            case ConfigurationHolder(vdev, holder) if holder == node:
                return Holding(resource_name(self.configuration), vdev)
        return None

    def with_slots(self, holders: Mapping[int, Holder]) -> SlotPool:
        """A copy with the given slots set; freed slots are written as `""`.

        The copy's `slots` and counts are derived from this one's rather than worked out
        again: a batch of Allocates decides one request after another on ever newer copies."""
        written = {i: format_usage(h) for i, h in holders.items()}
        changed = replace(
            self,
            usage={**self.usage, **{slot_id(self.name, i): v for i, v in written.items()}},
        )
        if "slots" in self.__dict__:  # cached_property keeps its value there
            before = self.slots
            after = {i: parse_usage(v) for i, v in written.items()}
            changed.__dict__["slots"] = {**before, **after}
            if "_tally" in self.__dict__:
                replaced = [(i, before[i]) for i in after if i in before]
                changed.__dict__["_tally"] = self._tally.changed(
                    _Tally.of(self.capacity, replaced), _Tally.of(self.capacity, after.items())
                )
        return changed


def usage_problems(pool: SlotPool) -> list[str]:
    """What in `deviceUsage` is ignored or unusable, for the agent and controller to log."""
    slots = pool.slots  # parsed once per Instance, shared with every other reader
    if len(slots) == len(pool.usage) and not pool._tally.corrupt:
        return []
    problems = []
    for key in sorted(pool.usage):
        index = slot_index(pool.name, key)
        if index is None:
            problems.append(f"Instance {pool.name}: ignoring key {key!r}, not one of its slots")
        elif isinstance(holder := pool.slots[index], Corrupt):
            problems.append(f"Instance {pool.name}: slot {key} is unavailable, {holder}")
    return problems


# --- instance level (§5.2) -------------------------------------------------------------------


def instance_level_health(pool: SlotPool, node: str) -> dict[str, bool]:
    """ListAndWatch of the instance-level plugin on `node`: slot id -> Healthy, below capacity.

    Healthy slots are exactly what `allocate_il` grants, all at once: a free slot that would
    exceed capacity (held slots past a lowered capacity) is Unhealthy, not an admission error.
    The slots `node` holds are Healthy only while the Instance is `reusable`.
    """
    healthy = set(pool.grantable)
    if pool.reusable:
        healthy.update(i for i in pool.held_by(node) if isinstance(pool.slots[i], NodeHolder))
    ids = _indices(pool.name, pool.capacity)
    return {slot: i in healthy for slot, i in ids.items()}


@lru_cache(maxsize=2048)
def _indices(instance: str, capacity: int) -> Mapping[str, int]:
    """Slot id -> index, in order, below capacity: every change of an Instance is read (its
    `deviceUsage` keys) and listed (ListAndWatch) again."""
    return MappingProxyType({slot: i for i, slot in enumerate(slot_ids(instance, capacity))})


def allocate_instance_level(pool: SlotPool, node: str, slots: Iterable[str]) -> SlotPool:
    """Claim exactly `slots` for `node`; ones it holds already pass (the kubelet re-offers them)."""
    mine = NodeHolder(node)
    claims: dict[int, Holder] = {}
    for slot in slots:
        index = slot_index(pool.name, slot)
        holder = FREE if index is None else pool.slots.get(index, FREE)
        if holder == mine:
            continue
        if index is None or index >= pool.capacity:
            raise AllocationError(
                f"{slot} is not a slot of Instance {pool.name} (capacity {pool.capacity})"
            )
        if holder != FREE:
            raise AllocationError(f"slot {slot} is {holder}")
        claims[index] = mine
    # Every claim is a distinct free slot below capacity: they all fit in `grantable` when
    # there is room for them (asked without listing the free slots, in a batch of Allocates
    # deciding on ever newer copies).
    if len(claims) > pool.room:
        raise AllocationError(
            f"Instance {pool.name} is at capacity {pool.capacity}: "
            f"{len(claims)} slots requested, {len(pool.grantable)} can be granted"
        )
    return pool.with_slots(claims) if claims else pool


def instance_level_preferred(
    pool: SlotPool, node: str, available: Iterable[str], must_include: Sequence[str], size: int
) -> list[str]:
    """GetPreferredAllocation of the instance-level plugin on `node`: `size` ids, the
    `must_include` ones first, then available slots from this node's own part of the range.

    The kubelets of nodes sharing an Instance choose among the same ids, each before it sees
    the others' grants; all taking the lowest free id, they ask for the same slot and all but
    one are refused. So the k-th of the Instance's n `nodes` starts at slot k*capacity/n (a
    node not listed, at a place given by its name) and goes up, wrapping around: nodes meet
    only once one has used its share. Only a preference: Allocate still decides.
    """
    must = list(dict.fromkeys(must_include))
    chosen = list(must)
    if pool.capacity > 0:
        if node in pool.nodes:
            place = pool.nodes.index(node) * pool.capacity // len(pool.nodes)
        else:
            place = zlib.crc32(node.encode())
        start = place % pool.capacity

        def distance(device: str) -> tuple[int, str]:
            index = slot_index(pool.name, device)
            far = pool.capacity  # ids that are no slot of this Instance come last
            return ((index - start) % pool.capacity if index is not None else far, device)

        chosen += sorted(set(available) - set(chosen), key=distance)
    return chosen[: max(size, len(must))]


# --- configuration level (§5.3) --------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """The slot a requested virtual device was bound to, for the container's env and mounts."""

    device: str
    instance: str
    slot: str


@dataclass(frozen=True)
class ConfigurationLevelAllocation:
    """Outcome of one Allocate: the Instances to write and, per container, its bindings in order."""

    pools: dict[str, SlotPool]  # only those whose deviceUsage changed, by Instance name
    containers: tuple[tuple[Binding, ...], ...]


def _of_configuration(configuration: str, pools: Iterable[SlotPool]) -> dict[str, SlotPool]:
    """The pools of `configuration`'s Instances by name, in name order: decisions must be
    deterministic."""
    return {
        i.name: i for i in sorted(pools, key=lambda i: i.name) if i.configuration == configuration
    }


def _bindings(pools: Iterable[SlotPool], node: str) -> dict[str, list[tuple[str, int]]]:
    """Virtual device -> the slots `node` holds as it (one, unless a partial write left two)."""
    bound: dict[str, list[tuple[str, int]]] = {}
    for pool in pools:
        for index, holding in pool.held_by(node).items():
            if isinstance(pool.slots[index], ConfigurationHolder):
                bound.setdefault(holding.device, []).append((pool.name, index))
    return bound


def _device_order(device: str) -> tuple[int, str]:
    """Numeric order for the `<configuration>-<n>` ids of one Configuration."""
    return (len(device), device)


@dataclass(frozen=True)
class ConfigurationLevelShare:
    """What one Instance adds to the configuration-level list of a node
    (`configuration_level_devices`)."""

    bound: frozenset[str]
    """The virtual devices the node holds in it."""
    offered: bool
    """Whether those are listed (the Instance is `reusable`)."""
    fresh: int
    """How many new ids it adds: its grantable slots, one at most when `unique`, none unless
    the node sees it."""


def configuration_level_share(
    pool: SlotPool, node: str, *, unique: bool
) -> ConfigurationLevelShare:
    """All that `configuration_level_devices` reads of `pool` besides its name and
    Configuration: a change that keeps this equal (a slot taken elsewhere while others stay
    free) keeps the list."""
    bound = frozenset(_bindings([pool], node))
    grantable = len(pool.grantable) if node in pool.nodes else 0
    return ConfigurationLevelShare(bound, pool.reusable, min(grantable, 1) if unique else grantable)


def configuration_level_devices(
    configuration: str, pools: Iterable[SlotPool], node: str, *, unique: bool
) -> list[str]:
    """ListAndWatch of the configuration-level plugin on `node`, all Healthy.

    The devices `node` holds in `reusable` Instances plus new ids for the capacity it could
    still get from Instances it sees: one per Instance with a grantable slot when `unique`,
    else one per grantable slot. The devices it holds elsewhere are left out (they go to no new
    container) and no new id takes their name: Allocate would take it for a re-offer.
    Any set of the new ids fits one container, so a request that cannot fit stays Pending.
    """
    shares = [
        configuration_level_share(i, node, unique=unique)
        for i in _of_configuration(configuration, pools).values()
    ]
    bound = frozenset().union(*(share.bound for share in shares))
    held = frozenset().union(*(share.bound for share in shares if share.offered))
    fresh = sum(share.fresh for share in shares)
    new: list[str] = []
    n = 0
    while len(new) < fresh:
        if (device := configuration_level_device_id(configuration, n)) not in bound:
            new.append(device)
        n += 1
    return sorted([*held, *new], key=_device_order)


def allocate_configuration_level(
    configuration: str,
    pools: Iterable[SlotPool],
    node: str,
    containers: Sequence[Sequence[str]],
    *,
    unique: bool,
) -> ConfigurationLevelAllocation:
    """Bind the virtual devices of each container request to slots of `configuration`.

    Devices `node` already holds keep their slot; when `unique` and two of one container share an
    Instance, the later one is moved. The rest go to the visible Instance with the most grantable
    slots (name breaks ties), never one the container already has when `unique`. Raises
    AllocationError only when no such slot exists.
    """
    before = _of_configuration(configuration, pools)
    state = dict(before)
    granted = tuple(
        _allocate_container(configuration, state, node, devices, unique) for devices in containers
    )
    changed = {name: i for name, i in state.items() if i.usage != before[name].usage}
    return ConfigurationLevelAllocation(changed, granted)


def _allocate_container(
    configuration: str,
    state: dict[str, SlotPool],
    node: str,
    devices: Sequence[str],
    unique: bool,
) -> tuple[Binding, ...]:
    """One container's bindings; updates `state` so later containers see this one's slots."""
    held = _bindings(state.values(), node)
    chosen: dict[str, tuple[str, int]] = {}
    used: set[str] = set()
    for device in dict.fromkeys(devices):
        for name, index in held.get(device, []):
            if device not in chosen and not (unique and name in used):
                chosen[device] = (name, index)
                used.add(name)
            else:  # a duplicate binding, or one that would break uniqueness: give the slot back
                state[name] = state[name].with_slots({index: FREE})
    for device in dict.fromkeys(d for d in devices if d not in chosen):
        if configuration_level_device_index(configuration, device) is None:
            raise AllocationError(f"{device!r} is not a device of Configuration {configuration}")
        candidates = [
            i
            for i in state.values()
            if node in i.nodes and i.grantable and not (unique and i.name in used)
        ]
        if not candidates:
            other = "other " if unique and used else ""
            rule = f" (unique devices: this container has {len(used)})" if unique else ""
            raise AllocationError(
                f"cannot allocate {device}: no {other}Instance of {configuration} seen by {node}"
                f" has a free slot{rule}"
            )
        best = min(candidates, key=lambda i: (-len(i.grantable), i.name))
        index = best.grantable[0]
        state[best.name] = best.with_slots({index: ConfigurationHolder(device, node)})
        chosen[device] = (best.name, index)
        used.add(best.name)
    return tuple(Binding(d, chosen[d][0], slot_id(*chosen[d])) for d in devices)


# --- releasing (§5.5, §7) --------------------------------------------------------------------


def holdings(pools: Iterable[SlotPool], node: str) -> set[Holding]:
    """Everything `node` holds in `pools`, through either resource."""
    return {h for pool in pools for h in pool.held_by(node).values()}


def release(pool: SlotPool, node: str, only: Collection[Holding] | None = None) -> SlotPool:
    """Free the slots `node` holds in `pool`: all of them, or only those in `only`."""
    freed = {index: FREE for index, h in pool.held_by(node).items() if only is None or h in only}
    return pool.with_slots(freed) if freed else pool


def leave(pool: SlotPool, node: str) -> SlotPool:
    """`pool` without `node` in `nodes`; the slots its containers hold stay theirs (§5.5)."""
    return replace(pool, nodes=tuple(n for n in pool.nodes if n != node))


def scrub_node(pool: SlotPool, node: str) -> SlotPool:
    """`pool` without a node that is gone: out of `nodes`, its slots freed."""
    return leave(release(pool, node), node)


def disposable(pool: SlotPool) -> bool:
    """Whether nothing keeps `pool`: no node sees its device and no node holds a slot."""
    return not pool.nodes and not pool.in_use


def finalizers(pool: SlotPool, current: Sequence[str]) -> list[str]:
    """`current` with SLOTS_FINALIZER exactly while a node holds a slot of `pool`.

    So deleting an Instance (by hand, or with its Configuration) waits until its slots are
    released: the record of a slot never goes while a container may use it. The API refuses
    new finalizers on an object being deleted, so none is added then.
    """
    if not pool.in_use:
        return [f for f in current if f != SLOTS_FINALIZER]
    if SLOTS_FINALIZER in current or pool.terminating:
        return list(current)
    return [*current, SLOTS_FINALIZER]
