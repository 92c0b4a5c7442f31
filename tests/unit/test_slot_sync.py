"""deviceUsage against what a node's containers use, both ways (docs/design.md §5.5).

One scenario per rule, then properties over random records and uses: whatever the record says,
the decision never takes a slot from another holder, never gives one slot twice, and after it
is applied every device in use is recorded or reported.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from akri.slot_sync import Conflict, SlotRef, Sync, User, recorded, stale_holdings, sync
from akri.slots import (
    FREE,
    ConfigurationHolder,
    Holding,
    NodeHolder,
    SlotPool,
    parse_usage,
)

CFG = "cfg"
CONFIGURATION_RESOURCE = "akri.sh/cfg"
APP = User("default", "holder", "app")
OTHER = User("default", "other", "app")


def inst(name: str, capacity: int, *usage: str, nodes: str = "n m") -> SlotPool:
    values = {f"{name}-{i}": value for i, value in enumerate(usage)}
    return SlotPool(name, CFG, capacity, tuple(nodes.split()), values)


def instance_level(instance: str, index: int) -> Holding:
    return Holding(f"akri.sh/{instance}", f"{instance}-{index}")


def configuration_level(n: int) -> Holding:
    return Holding(CONFIGURATION_RESOURCE, f"cfg-{n}")


def test_recorded_names_every_holding_of_the_node_and_where() -> None:
    a = inst("cfg-a", 3, "n", "C:cfg-4:n", "m")
    assert recorded([a], "n") == {
        instance_level("cfg-a", 0): SlotRef("cfg-a", 0),
        configuration_level(4): SlotRef("cfg-a", 1),
    }
    assert recorded([a], "m") == {instance_level("cfg-a", 2): SlotRef("cfg-a", 2)}
    assert str(SlotRef("cfg-a", 1)) == "cfg-a-1"


def test_devices_in_use_that_are_recorded_need_nothing() -> None:
    a = inst("cfg-a", 2, "n", "C:cfg-0:n")
    assert (
        sync([a], "n", {instance_level("cfg-a", 0): {APP}, configuration_level(0): {APP}}, {})
        == Sync()
    )


def test_a_lost_instance_level_slot_is_recorded_again_when_free() -> None:
    a = inst("cfg-a", 2, "", "m")
    assert sync([a], "n", {instance_level("cfg-a", 0): {APP}}, {}).record == {
        "cfg-a": {0: NodeHolder("n")}
    }


def test_a_lost_slot_past_a_lowered_capacity_is_recorded_too() -> None:
    a = inst("cfg-a", 1, "m")
    assert sync([a], "n", {instance_level("cfg-a", 2): {APP}}, {}).record == {
        "cfg-a": {2: NodeHolder("n")}
    }


def test_a_lost_configuration_level_device_goes_back_to_its_remembered_slot() -> None:
    a, b = inst("cfg-a", 2), inst("cfg-b", 2, "m")
    decision = sync(
        [a, b], "n", {configuration_level(3): {APP}}, {configuration_level(3): SlotRef("cfg-b", 1)}
    )
    assert decision.record == {"cfg-b": {1: ConfigurationHolder("cfg-3", "n")}}


def test_a_device_whose_slot_is_not_known_is_reported_as_unknown() -> None:
    a = inst("cfg-a", 2)
    uses = {
        configuration_level(0): {APP},
        instance_level("cfg-gone", 0): {APP},
        Holding("akri.sh/cfg-a", "x"): {APP},
    }
    remembered = {configuration_level(0): SlotRef("cfg-gone", 0)}  # its Instance is gone
    decision = sync([a], "n", uses, remembered)
    assert decision.record == {}
    assert decision.unknown == sorted(uses, key=lambda h: (h.resource, h.device))


def test_a_remembered_slot_of_another_configuration_is_not_written() -> None:
    other = SlotPool("dog-a", "dog", 1, ("n",), {})
    decision = sync(
        [other], "n", {configuration_level(0): {APP}}, {configuration_level(0): SlotRef("dog-a", 0)}
    )
    assert decision.unknown == [configuration_level(0)]


def test_a_slot_another_holder_has_is_a_conflict_and_stays_with_it() -> None:
    a = inst("cfg-a", 2, "m", "C:cfg-1:n")
    uses = {instance_level("cfg-a", 0): {APP, OTHER}, configuration_level(0): {APP}}
    decision = sync([a], "n", uses, {configuration_level(0): SlotRef("cfg-a", 1)})
    assert decision.record == {}
    assert decision.conflicts == [
        Conflict(
            configuration_level(0), SlotRef("cfg-a", 1), ConfigurationHolder("cfg-1", "n"), (APP,)
        ),
        Conflict(instance_level("cfg-a", 0), SlotRef("cfg-a", 0), NodeHolder("m"), (APP, OTHER)),
    ]
    assert str(decision.conflicts[1]) == (
        "container app of pod default/holder, container app of pod default/other: slot "
        "cfg-a-0 (as cfg-a-0 of akri.sh/cfg-a) is in use, but deviceUsage says it is held by "
        "node m"
    )


def test_a_corrupt_slot_in_use_is_a_conflict() -> None:
    a = inst("cfg-a", 1, "C:x")
    (conflict,) = sync([a], "n", {instance_level("cfg-a", 0): {APP}}, {}).conflicts
    assert conflict.holder == parse_usage("C:x")


def test_two_devices_claiming_one_free_slot_record_the_first_and_report_the_second() -> None:
    a = inst("cfg-a", 2)
    uses = {instance_level("cfg-a", 0): {APP}, configuration_level(0): {OTHER}}
    decision = sync([a], "n", uses, {configuration_level(0): SlotRef("cfg-a", 0)})
    assert decision.record == {"cfg-a": {0: ConfigurationHolder("cfg-0", "n")}}
    assert decision.conflicts == [
        Conflict(
            instance_level("cfg-a", 0),
            SlotRef("cfg-a", 0),
            ConfigurationHolder("cfg-0", "n"),
            (APP,),
        )
    ]


def test_a_stale_memory_never_moves_a_recorded_device() -> None:
    a, b = inst("cfg-a", 1), inst("cfg-b", 1, "C:cfg-0:n")
    assert (
        sync(
            [a, b],
            "n",
            {configuration_level(0): {APP}},
            {configuration_level(0): SlotRef("cfg-a", 0)},
        )
        == Sync()
    )


# --- reclaiming ----------------------------------------------------------------------------

INSTANCE_LEVEL_HOLDING = instance_level("cfg-a", 0)
CONFIGURATION_LEVEL_HOLDING = configuration_level(0)


def test_reclaim_frees_holdings_unused_for_the_grace_period() -> None:
    stale, since = stale_holdings(
        {INSTANCE_LEVEL_HOLDING, CONFIGURATION_LEVEL_HOLDING},
        {INSTANCE_LEVEL_HOLDING},
        {},
        now=100.0,
        grace=20.0,
    )
    assert (stale, since) == (set(), {CONFIGURATION_LEVEL_HOLDING: 100.0})
    stale, since = stale_holdings(
        {INSTANCE_LEVEL_HOLDING, CONFIGURATION_LEVEL_HOLDING},
        {INSTANCE_LEVEL_HOLDING},
        since,
        now=119.9,
        grace=20.0,
    )
    assert (stale, since) == (set(), {CONFIGURATION_LEVEL_HOLDING: 100.0})
    stale, since = stale_holdings(
        {INSTANCE_LEVEL_HOLDING, CONFIGURATION_LEVEL_HOLDING}, set(), since, now=120.0, grace=20.0
    )
    assert (stale, since) == (
        {CONFIGURATION_LEVEL_HOLDING},
        {CONFIGURATION_LEVEL_HOLDING: 100.0, INSTANCE_LEVEL_HOLDING: 120.0},
    )


def test_reclaim_use_resets_the_timer_and_released_holdings_drop_out() -> None:
    since = {INSTANCE_LEVEL_HOLDING: 0.0, CONFIGURATION_LEVEL_HOLDING: 0.0}
    assert stale_holdings(
        {INSTANCE_LEVEL_HOLDING, CONFIGURATION_LEVEL_HOLDING},
        {CONFIGURATION_LEVEL_HOLDING},
        since,
        now=10.0,
        grace=20.0,
    ) == (set(), {INSTANCE_LEVEL_HOLDING: 0.0})
    assert stale_holdings(
        {CONFIGURATION_LEVEL_HOLDING}, set(), {INSTANCE_LEVEL_HOLDING: 0.0}, now=30.0, grace=20.0
    ) == (set(), {CONFIGURATION_LEVEL_HOLDING: 30.0})


def test_reclaim_keeps_unwritten_releases_due() -> None:
    stale, since = stale_holdings(
        {CONFIGURATION_LEVEL_HOLDING},
        set(),
        {CONFIGURATION_LEVEL_HOLDING: 0.0},
        now=20.0,
        grace=20.0,
    )
    assert stale == {CONFIGURATION_LEVEL_HOLDING}
    assert stale_holdings({CONFIGURATION_LEVEL_HOLDING}, set(), since, now=20.5, grace=20.0)[0] == {
        CONFIGURATION_LEVEL_HOLDING
    }


# --- properties ----------------------------------------------------------------------------

NAMES = ("cfg-a", "cfg-b")
values = st.sampled_from(["", "n", "m", "C:cfg-0:n", "C:cfg-1:n", "C:cfg-0:m", "C:x", "bad:"])
records = st.fixed_dictionaries({name: st.lists(values, max_size=3) for name in NAMES}).map(
    lambda usage: [inst(name, 2, *usage[name]) for name in NAMES]
)
holdings = st.one_of(
    st.builds(instance_level, st.sampled_from(NAMES), st.integers(0, 3)),
    st.builds(configuration_level, st.integers(0, 3)),
    st.just(Holding("akri.sh/cfg-a", "junk")),
)
users = st.sets(st.sampled_from([APP, OTHER]), min_size=1).map(frozenset)
slot_refs = st.builds(SlotRef, st.sampled_from([*NAMES, "gone"]), st.integers(0, 3))


@settings(max_examples=400, deadline=None)
@given(
    pool=records,
    uses=st.dictionaries(holdings, users, max_size=5),
    remembered=st.dictionaries(holdings, slot_refs, max_size=5),
)
def test_sync_takes_only_free_slots_once_and_accounts_for_every_device(
    pool: list[SlotPool],
    uses: dict[Holding, frozenset[User]],
    remembered: dict[Holding, SlotRef],
) -> None:
    decision = sync(pool, "n", uses, remembered)
    by_name = {i.name: i for i in pool}
    for name, slots in decision.record.items():
        assert slots
        for index, holder in slots.items():
            assert by_name[name].slots.get(index, FREE) == FREE  # never overrules a holder
            assert getattr(holder, "node", None) == "n"
    after = [i.with_slots(decision.record.get(i.name, {})) for i in pool]
    now_recorded = recorded(after, "n")
    reported = {c.holding for c in decision.conflicts} | set(decision.unknown)
    for holding in uses:  # every device in use ends recorded, or is reported
        assert (holding in now_recorded) != (holding in reported)
    assert all(h in uses and h not in recorded(pool, "n") for h in reported)
    assert sync(after, "n", uses, remembered).record == {}  # applying it leaves nothing to do
