"""Properties of the slot pool over random histories and random (corrupt) deviceUsage."""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterable

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from akri.naming import slot_index
from akri.slots import (
    FREE,
    AllocationError,
    ConfigurationHolder,
    ConfigurationLevelAllocation,
    Corrupt,
    Holder,
    NodeHolder,
    SlotPool,
    allocate_configuration_level,
    allocate_instance_level,
    configuration_level_devices,
    format_usage,
    holdings,
    instance_level_health,
    parse_usage,
    release,
    scrub_node,
    usage_problems,
)

CFG = "cfg"
RESOURCE = "akri.sh/cfg"
NODES = ("n", "m", "k")
node_names = st.sampled_from(NODES)


def touched_only_by(actor: str, old: SlotPool, new: SlotPool) -> bool:
    """Whether every slot that changed went between free and held by `actor`."""
    mine = {FREE, NodeHolder(actor)}
    return all(
        old.slots.get(i, FREE) == new.slots.get(i, FREE)
        or all(
            h in mine or (isinstance(h, ConfigurationHolder) and h.node == actor)
            for h in (old.slots.get(i, FREE), new.slots.get(i, FREE))
        )
        for i in old.slots.keys() | new.slots.keys()
    )


class ConfigurationSlots(RuleBasedStateMachine):
    """One Configuration's Instances under allocations, re-offers, releases, scrubs and resizes."""

    def __init__(self) -> None:
        super().__init__()
        self.pool: dict[str, SlotPool] = {}
        self.unique = True

    @initialize(
        specs=st.lists(
            st.tuples(
                st.integers(1, 3), st.sets(node_names, min_size=1), st.none() | st.integers(0, 3)
            ),
            min_size=1,
            max_size=3,
        ),
        unique=st.booleans(),
    )
    def setup(self, specs: list[tuple[int, set[str], int | None]], unique: bool) -> None:
        self.unique = unique
        for k, (capacity, nodes, corrupt) in enumerate(specs):
            name = f"cfg-{k:06x}"
            usage = {} if corrupt is None else {f"{name}-{corrupt}": "C:x"}
            self.pool[name] = SlotPool(name, CFG, capacity, tuple(sorted(nodes)), usage)

    def commit(self, actor: str, changed: Iterable[SlotPool]) -> None:
        """Apply a decision, checking it kept to capacity and touched only `actor`'s slots."""
        for new in changed:
            old = self.pool[new.name]
            assert new.held <= old.held or new.held <= new.capacity
            assert touched_only_by(actor, old, new)
            self.pool[new.name] = new

    def configuration_level_held(self, node: str) -> set[str]:
        return {h.device for h in holdings(self.pool.values(), node) if h.resource == RESOURCE}

    def fresh_configuration_level_ids(self, node: str) -> list[str]:
        """The advertised ids `node` does not hold yet."""
        held = self.configuration_level_held(node)
        ads = configuration_level_devices(CFG, self.pool.values(), node, unique=self.unique)
        return [d for d in ads if d not in held]

    def allocate(self, node: str, containers: list[list[str]]) -> ConfigurationLevelAllocation:
        """A configuration-level Allocate, checked for bindings and idempotence, then written."""
        alloc = allocate_configuration_level(
            CFG, self.pool.values(), node, containers, unique=self.unique
        )
        after = {**self.pool, **alloc.pools}
        for devices, bindings in zip(containers, alloc.containers, strict=True):
            assert [b.device for b in bindings] == devices
            for b in bindings:
                slot = after[b.instance].usage[b.slot]
                assert parse_usage(slot) == ConfigurationHolder(b.device, node)
            if self.unique:
                assert len({b.instance for b in bindings}) == len(bindings)
        again = allocate_configuration_level(
            CFG, after.values(), node, containers, unique=self.unique
        )
        assert again.pools == {}
        assert again.containers == alloc.containers
        self.commit(node, alloc.pools.values())
        return alloc

    @rule(data=st.data(), node=node_names)
    def allocate_healthy_instance_level_slots(self, data: st.DataObject, node: str) -> None:
        instance = data.draw(st.sampled_from(sorted(self.pool.values(), key=lambda i: i.name)))
        healthy = [s for s, ok in instance_level_health(instance, node).items() if ok]
        slots = data.draw(
            st.lists(st.sampled_from(healthy), unique=True) if healthy else st.just([])
        )
        new = allocate_instance_level(instance, node, slots)
        for slot in slots:
            assert parse_usage(new.usage[slot]) == NodeHolder(node)
        assert allocate_instance_level(new, node, slots) is new  # the kubelet re-offers
        self.commit(node, [new])

    @rule(data=st.data(), node=node_names)
    def allocate_any_instance_level_slots(self, data: st.DataObject, node: str) -> None:
        instance = data.draw(st.sampled_from(sorted(self.pool.values(), key=lambda i: i.name)))
        ids = st.builds("{}-{}".format, st.just(instance.name), st.integers(0, 4))
        try:
            new = allocate_instance_level(instance, node, data.draw(st.lists(ids, max_size=3)))
        except AllocationError:
            return
        self.commit(node, [new])

    @rule(data=st.data(), node=node_names, split=st.booleans())
    def allocate_advertised_configuration_level_ids(
        self, data: st.DataObject, node: str, split: bool
    ) -> None:
        fresh = self.fresh_configuration_level_ids(node)
        picked = data.draw(st.lists(st.sampled_from(fresh), unique=True)) if fresh else []
        cut = len(picked) // 2 if split else len(picked)
        self.allocate(node, [c for c in (picked[:cut], picked[cut:]) if c])

    @rule(data=st.data(), node=node_names)
    def re_offer_configuration_level_ids(self, data: st.DataObject, node: str) -> None:
        """The kubelet hands held ids (an init container's, a finished pod's) to a container."""
        ads = configuration_level_devices(CFG, self.pool.values(), node, unique=self.unique)
        if not ads:
            return
        devices = data.draw(st.lists(st.sampled_from(ads), unique=True, min_size=1))
        held = self.configuration_level_held(node)
        try:
            self.allocate(node, [devices])
        except AllocationError:
            # Only uniqueness can defeat advertised ids, and only with held ids in the request.
            assert self.unique
            assert held.intersection(devices)

    @rule(data=st.data(), node=node_names)
    def converge_after_partial_write(self, data: st.DataObject, node: str) -> None:
        devices = self.fresh_configuration_level_ids(node)
        if not devices:
            return
        plan = allocate_configuration_level(
            CFG, self.pool.values(), node, [devices], unique=self.unique
        )
        landed = data.draw(st.lists(st.sampled_from(sorted(plan.pools)), unique=True))
        self.commit(node, [plan.pools[name] for name in landed])
        self.allocate(node, [devices])

    @rule(data=st.data(), node=node_names, everything=st.booleans())
    def release_node(self, data: st.DataObject, node: str, everything: bool) -> None:
        held = sorted(holdings(self.pool.values(), node), key=lambda h: (h.resource, h.device))
        only = None if everything or not held else set(data.draw(st.lists(st.sampled_from(held))))
        released = [release(i, node, only) for i in self.pool.values()]
        self.commit(node, released)
        if only is None:
            assert holdings(self.pool.values(), node) == set()
        else:
            assert holdings(self.pool.values(), node) == set(held) - only

    @rule(node=node_names)
    def scrub(self, node: str) -> None:
        self.commit(node, [scrub_node(i, node) for i in self.pool.values()])
        assert all(node not in i.nodes for i in self.pool.values())
        assert holdings(self.pool.values(), node) == set()

    @rule(data=st.data(), capacity=st.integers(1, 4), node=node_names)
    def resize_or_see(self, data: st.DataObject, capacity: int, node: str) -> None:
        name = data.draw(st.sampled_from(sorted(self.pool)))
        old = self.pool[name]
        nodes = old.nodes if node in old.nodes else (*old.nodes, node)
        self.pool[name] = SlotPool(name, CFG, capacity, nodes, old.usage)

    @invariant()
    def every_node_holds_each_configuration_level_id_once(self) -> None:
        for node in NODES:
            bound = Counter(
                h.vdev
                for i in self.pool.values()
                for h in i.slots.values()
                if isinstance(h, ConfigurationHolder) and h.node == node
            )
            assert all(count == 1 for count in bound.values())

    @invariant()
    def everything_advertised_is_allocatable(self) -> None:
        for node in NODES:
            for instance in self.pool.values():
                healthy = [s for s, ok in instance_level_health(instance, node).items() if ok]
                allocate_instance_level(instance, node, healthy)
            for device in configuration_level_devices(
                CFG, self.pool.values(), node, unique=self.unique
            ):
                allocate_configuration_level(
                    CFG, self.pool.values(), node, [[device]], unique=self.unique
                )
            fresh = self.fresh_configuration_level_ids(node)
            allocate_configuration_level(CFG, self.pool.values(), node, [fresh], unique=self.unique)


TestConfigurationSlots = ConfigurationSlots.TestCase
TestConfigurationSlots.settings = settings(max_examples=120, stateful_step_count=25, deadline=None)


# --- corrupt deviceUsage never raises ------------------------------------------------------------

grammar_values = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "n", "m", "C:cfg-0:n", "C:cfg-1:m", "C:x", "C::n", "a:b", ":"]),
    st.builds("C:{}:{}".format, st.text(max_size=4), st.text(max_size=4)),
)
usage_keys = st.one_of(st.text(max_size=12), st.builds("cfg-a-{}".format, st.integers(-1, 6)))
usages = st.dictionaries(usage_keys, grammar_values, max_size=8)


@settings(max_examples=300, deadline=None)
@given(value=grammar_values)
def test_every_value_parses_and_formats_back(value: str) -> None:
    assert format_usage(parse_usage(value)) == value


@settings(max_examples=300, deadline=None)
@given(usage=usages, capacity=st.integers(-1, 5), node=node_names, unique=st.booleans())
def test_corrupt_usage_never_raises(
    usage: dict[str, str], capacity: int, node: str, unique: bool
) -> None:
    a = SlotPool("cfg-a", CFG, capacity, NODES, usage)
    b = SlotPool("cfg-b", CFG, 2, NODES, {k.replace("cfg-a", "cfg-b"): v for k, v in usage.items()})
    pool = [a, b]
    problems = "\n".join(usage_problems(a))
    for key, value in usage.items():
        if slot_index("cfg-a", key) is None or isinstance(parse_usage(value), Corrupt):
            assert repr(key) in problems or key in problems
    healthy = [s for s, ok in instance_level_health(a, node).items() if ok]
    assert all(usage.get(s, "") in ("", node) for s in healthy)
    assert allocate_instance_level(a, node, healthy).held <= max(a.held, a.capacity)
    for device in configuration_level_devices(CFG, pool, node, unique=unique):
        allocate_configuration_level(CFG, pool, node, [[device]], unique=unique)
    with contextlib.suppress(AllocationError):
        allocate_instance_level(a, node, usage)
    with contextlib.suppress(AllocationError):
        allocate_configuration_level(CFG, pool, node, [list(usage)], unique=unique)
    for instance in pool:
        released = release(instance, node)
        assert holdings([released], node) == set()
        mine = sum(instance.holding(i, node) is not None for i in instance.slots)
        assert released.held == instance.held - mine
        assert node not in scrub_node(instance, node).nodes


@settings(max_examples=300, deadline=None)
@given(
    usage=usages,
    changes=st.dictionaries(st.integers(0, 6), grammar_values.map(parse_usage), max_size=4),
)
def test_slots_of_a_changed_copy_are_those_of_its_usage(
    usage: dict[str, str], changes: dict[int, Holder]
) -> None:
    before = SlotPool("cfg-a", CFG, 3, NODES, usage)
    assert before.held >= 0  # parsed and counted, so the copy derives both from it

    after = before.with_slots(changes)

    parsed = SlotPool("cfg-a", CFG, 3, NODES, dict(after.usage))
    assert after.slots == parsed.slots
    assert after.held == parsed.held
    assert after.in_use == parsed.in_use
    assert after.keys_follow_capacity == parsed.keys_follow_capacity
    assert bool(usage_problems(after)) == bool(usage_problems(parsed))


@settings(max_examples=300, deadline=None)
@given(
    usage=usages,
    capacity=st.integers(0, 5),
    terminating=st.booleans(),
    node=node_names,
    wanted=st.lists(st.builds("cfg-a-{}".format, st.integers(0, 6)), max_size=4),
)
def test_an_instance_level_allocate_grants_what_is_healthy_all_at_once(
    usage: dict[str, str], capacity: int, terminating: bool, node: str, wanted: list[str]
) -> None:
    """Exactly the slots it holds, and free slots within `grantable`'s count, are granted."""
    a = SlotPool("cfg-a", CFG, capacity, NODES, usage, terminating)
    mine = {f"cfg-a-{i}" for i, h in a.slots.items() if h == NodeHolder(node)}
    new = {slot for slot in wanted if slot not in mine}
    free = {f"cfg-a-{i}" for i in range(capacity) if a.slots.get(i, FREE) == FREE}
    fits = new <= free and len(new) <= len(a.grantable)
    try:
        granted = allocate_instance_level(a, node, wanted)
    except AllocationError:
        assert not fits
    else:
        assert fits
        assert holdings([granted], node) >= holdings([a], node)
        assert granted.held == a.held + len(new)


@settings(max_examples=300, deadline=None)
@given(usage=usages, node=node_names)
def test_held_by_lists_every_holding_of_the_node_in_slot_order(
    usage: dict[str, str], node: str
) -> None:
    a = SlotPool("cfg-a", CFG, 3, NODES, usage)

    held = a.held_by(node)

    assert list(held) == sorted(held)
    assert held == {i: h for i in a.slots if (h := a.holding(i, node)) is not None}
