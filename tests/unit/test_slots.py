"""Rules of the capacity slot pool (docs/design.md §5.2-5.5), one table row or scenario per rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from akri.naming import SLOTS_FINALIZER
from akri.slots import (
    FREE,
    AllocationError,
    Binding,
    ConfigurationHolder,
    Corrupt,
    Holder,
    Holding,
    NodeHolder,
    SlotPool,
    allocate_configuration_level,
    allocate_instance_level,
    configuration_level_devices,
    configuration_level_share,
    disposable,
    finalizers,
    format_usage,
    holdings,
    instance_level_health,
    instance_level_preferred,
    leave,
    parse_usage,
    release,
    scrub_node,
    usage_problems,
)

CFG = "cfg"


def inst(name: str = "cfg-a", capacity: int = 2, *usage: str, nodes: str = "n m") -> SlotPool:
    """An Instance of `cfg` whose slot i has the value `usage[i]`."""
    values = {f"{name}-{i}": value for i, value in enumerate(usage)}
    return SlotPool(name, CFG, capacity, tuple(nodes.split()), values)


def values(instance: SlotPool) -> list[str]:
    """Slot values 0..capacity-1, absent keys read as free."""
    return [instance.usage.get(f"{instance.name}-{i}", "") for i in range(instance.capacity)]


# --- deviceUsage grammar (§4) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "holder"),
    [
        ("", FREE),
        ("n", NodeHolder("n")),
        ("node-1.example.com", NodeHolder("node-1.example.com")),
        ("C:cfg-0:n", ConfigurationHolder("cfg-0", "n")),
        ("C:x", Corrupt("C:x")),
        ("C::n", Corrupt("C::n")),
        ("C:cfg-0:", Corrupt("C:cfg-0:")),
        ("C:cfg-0:n:x", Corrupt("C:cfg-0:n:x")),
        ("c:cfg-0:n", Corrupt("c:cfg-0:n")),
        ("a:b", Corrupt("a:b")),
        (":", Corrupt(":")),
    ],
)
def test_parse_usage(value: str, holder: Holder) -> None:
    assert parse_usage(value) == holder


@pytest.mark.parametrize(
    "holder", [FREE, NodeHolder("n"), ConfigurationHolder("cfg-3", "n"), Corrupt("a:b")]
)
def test_format_usage_reads_back(holder: Holder) -> None:
    assert parse_usage(format_usage(holder)) == holder


def test_format_usage_values() -> None:
    assert format_usage(FREE) == ""
    assert format_usage(NodeHolder("n")) == "n"
    assert format_usage(ConfigurationHolder("cfg-0", "n")) == "C:cfg-0:n"


@pytest.mark.parametrize(
    "make",
    [
        lambda: NodeHolder(""),
        lambda: NodeHolder("a:b"),
        lambda: ConfigurationHolder("", "n"),
        lambda: ConfigurationHolder("cfg:0", "n"),
        lambda: ConfigurationHolder("cfg-0", "n:1"),
    ],
)
def test_unwritable_holders_are_refused(make: object) -> None:
    with pytest.raises(ValueError, match="cannot be written"):
        make()  # type: ignore[operator]


def test_instance_view_skips_garbage_keys_and_counts_every_occupied_slot() -> None:
    a = SlotPool(
        "cfg-a",
        CFG,
        2,
        ("n",),
        {"cfg-a-0": "C:x", "cfg-a-01": "n", "cfg-b-1": "m", "junk": "", "cfg-a-4": "m"},
    )
    assert a.slots == {0: Corrupt("C:x"), 4: NodeHolder("m")}
    assert a.held == 2  # the corrupt slot and the one past capacity
    assert a.grantable == ()


def test_usage_problems_name_garbage_keys_and_corrupt_values() -> None:
    a = SlotPool("cfg-a", CFG, 2, ("n",), {"cfg-a-0": "C::n", "cfg-a-1": "n", "junk": "x"})
    assert usage_problems(a) == [
        "Instance cfg-a: slot cfg-a-0 is unavailable, corrupt ('C::n')",
        "Instance cfg-a: ignoring key 'junk', not one of its slots",
    ]
    assert usage_problems(inst("cfg-a", 2, "n", "C:cfg-0:m")) == []


# --- instance level (§5.2) -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "healthy"),
    [
        ("", True),
        ("n", True),
        ("m", False),
        ("C:cfg-0:n", False),
        ("C:cfg-0:m", False),
        ("C:x", False),
    ],
)
def test_instance_level_health_per_slot(value: str, healthy: bool) -> None:
    assert instance_level_health(inst("cfg-a", 2, value), "n") == {
        "cfg-a-0": healthy,
        "cfg-a-1": True,
    }


def test_instance_level_health_lists_slots_below_capacity_only() -> None:
    assert list(instance_level_health(inst("cfg-a", 3, "", "", "", "n"), "n")) == [
        "cfg-a-0",
        "cfg-a-1",
        "cfg-a-2",
    ]


def test_instance_level_allocate_claims_free_slots_for_the_node() -> None:
    a = allocate_instance_level(inst("cfg-a", 3, "", "m"), "n", ["cfg-a-0", "cfg-a-2"])
    assert values(a) == ["n", "m", "n"]


def test_instance_level_allocate_accepts_a_re_offer_without_a_write() -> None:
    a = inst("cfg-a", 2, "n")
    assert allocate_instance_level(a, "n", ["cfg-a-0"]) is a


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("m", "slot cfg-a-0 is held by node m"),
        ("C:cfg-0:n", "slot cfg-a-0 is held by node n as cfg-0"),
        ("C:cfg-0:m", "slot cfg-a-0 is held by node m as cfg-0"),
        ("C:x", "slot cfg-a-0 is corrupt"),
    ],
)
def test_instance_level_allocate_refuses_slots_held_otherwise(value: str, reason: str) -> None:
    with pytest.raises(AllocationError, match=reason):
        allocate_instance_level(inst("cfg-a", 2, value), "n", ["cfg-a-1", "cfg-a-0"])


def test_instance_level_preferred_starts_each_node_in_its_own_share_of_the_slots() -> None:
    pool = inst("cfg-a", 8, nodes="n m p q")
    every = [f"cfg-a-{i}" for i in range(8)]

    firsts = {
        node: instance_level_preferred(pool, node, every, [], 2) for node in ("n", "m", "p", "q")
    }

    assert firsts == {
        "n": ["cfg-a-0", "cfg-a-1"],
        "m": ["cfg-a-2", "cfg-a-3"],
        "p": ["cfg-a-4", "cfg-a-5"],
        "q": ["cfg-a-6", "cfg-a-7"],
    }


def test_instance_level_preferred_wraps_around_and_offers_only_what_is_available() -> None:
    pool = inst("cfg-a", 4, nodes="n m")
    available = ["cfg-a-0", "cfg-a-1", "cfg-a-3", "cfg-b-0"]

    assert instance_level_preferred(pool, "m", available, [], 3) == [
        "cfg-a-3",
        "cfg-a-0",
        "cfg-a-1",
    ]
    assert instance_level_preferred(pool, "m", available, [], 9) == [
        "cfg-a-3",
        "cfg-a-0",
        "cfg-a-1",
        "cfg-b-0",  # no slot of this Instance: last
    ]


def test_instance_level_preferred_puts_must_include_first_and_returns_the_size_asked() -> None:
    pool = inst("cfg-a", 4, nodes="n m")
    available = ["cfg-a-0", "cfg-a-1", "cfg-a-2", "cfg-a-3"]

    assert instance_level_preferred(pool, "m", available, ["cfg-a-1"], 2) == ["cfg-a-1", "cfg-a-2"]
    assert instance_level_preferred(pool, "m", available, ["cfg-a-1", "cfg-a-0"], 1) == [
        "cfg-a-1",
        "cfg-a-0",
    ]


def test_instance_level_preferred_of_a_node_not_listed_is_its_own_and_stable() -> None:
    pool = inst("cfg-a", 16, nodes="n")
    every = [f"cfg-a-{i}" for i in range(16)]

    first = instance_level_preferred(pool, "elsewhere", every, [], 16)

    assert sorted(first) == sorted(every)
    assert first == instance_level_preferred(pool, "elsewhere", list(reversed(every)), [], 16)
    assert instance_level_preferred(inst("cfg-a", 0), "n", every, [], 2) == []


@pytest.mark.parametrize("slot", ["cfg-a-2", "cfg-a-01", "cfg-b-0", "cfg-a"])
def test_instance_level_allocate_refuses_ids_that_are_no_grantable_slot(slot: str) -> None:
    with pytest.raises(AllocationError, match="is not a slot of Instance cfg-a"):
        allocate_instance_level(inst("cfg-a", 2), "n", [slot])


def test_instance_level_after_capacity_drop_nothing_is_granted_until_holders_drop_below_it() -> (
    None
):
    a = inst("cfg-a", 1, "", "n", "m")  # capacity 3 -> 1 with slots 1 and 2 held
    assert instance_level_health(a, "n") == {"cfg-a-0": False}
    with pytest.raises(AllocationError, match="at capacity 1"):
        allocate_instance_level(a, "n", ["cfg-a-0"])
    assert allocate_instance_level(a, "n", ["cfg-a-1"]) is a  # still held: a re-offer passes
    a = release(a, "m")
    assert instance_level_health(a, "n") == {"cfg-a-0": False}
    a = release(a, "n")
    assert instance_level_health(a, "n") == {"cfg-a-0": True}
    assert values(allocate_instance_level(a, "n", ["cfg-a-0"])) == ["n"]


def test_instance_level_healthy_slots_are_the_ones_capacity_still_allows() -> None:
    a = inst("cfg-a", 3, "", "", "", "", "m")  # capacity 5 -> 3 with slot 4 held
    assert instance_level_health(a, "n") == {"cfg-a-0": True, "cfg-a-1": True, "cfg-a-2": False}
    assert values(allocate_instance_level(a, "n", ["cfg-a-0", "cfg-a-1"])) == ["n", "n", ""]
    assert values(allocate_instance_level(a, "n", ["cfg-a-2"])) == [
        "",
        "",
        "n",
    ]  # legal, so granted
    with pytest.raises(AllocationError, match="3 slots requested, 2 can be granted"):
        allocate_instance_level(a, "n", ["cfg-a-0", "cfg-a-1", "cfg-a-2"])


def test_slots_held_over_a_lowered_capacity_go_to_no_new_container() -> None:
    """Capacity 2 -> 1 while n holds both slots (soak seed 2337421052): the containers using
    them keep them, but a slot n's ended container left must not go to a new one, or two
    containers use a device of capacity 1."""
    a = inst("cfg-a", 1, "n", "m")
    assert not a.reusable
    assert instance_level_health(a, "n") == {"cfg-a-0": False}
    assert instance_level_health(release(a, "m"), "n") == {
        "cfg-a-0": True
    }  # back to capacity: reusable
    b = inst("cfg-a", 1, "C:cfg-0:n", "C:cfg-1:n")
    assert configuration_level_devices(CFG, [b], "n", unique=True) == []
    one_left = release(b, "n", {Holding("akri.sh/cfg", "cfg-0")})
    assert configuration_level_devices(CFG, [one_left], "n", unique=True) == ["cfg-1"]
    assert (
        allocate_configuration_level(CFG, [b], "n", [["cfg-1"]], unique=True).pools == {}
    )  # re-offer


@pytest.mark.parametrize(
    "closed",
    [
        replace(inst("cfg-a", 1, "C:cfg-0:n"), terminating=True),
        inst("cfg-a", 1, "C:cfg-0:n", "m"),
    ],
)
def test_a_new_id_never_takes_the_name_of_a_device_held_where_it_is_not_offered(
    closed: SlotPool,
) -> None:
    """Allocate would take the new id for a re-offer of the held one and grant its slot."""
    pool = [closed, inst("cfg-b", 1)]
    assert configuration_level_devices(CFG, pool, "n", unique=True) == ["cfg-1"]
    (binding,) = allocate_configuration_level(CFG, pool, "n", [["cfg-1"]], unique=True).containers[
        0
    ]
    assert binding.instance == "cfg-b"


# --- configuration level (§5.3) and the worked example (§5.4) --------------------------------


def bind(device: str, slot: str) -> Binding:
    return Binding(device, slot.rsplit("-", 1)[0], slot)


def written(changed: dict[str, SlotPool], *pool: SlotPool) -> list[SlotPool]:
    """The pool after writing an allocation's Instances."""
    return [changed.get(i.name, i) for i in pool]


@pytest.mark.parametrize(("unique", "free_ids"), [(True, 2), (False, 4)])
def test_worked_example(unique: bool, free_ids: int) -> None:
    pool = [inst("cfg-a"), inst("cfg-b")]
    assert instance_level_health(pool[0], "n") == {"cfg-a-0": True, "cfg-a-1": True}
    assert instance_level_health(pool[1], "n") == {"cfg-b-0": True, "cfg-b-1": True}
    assert configuration_level_devices(CFG, pool, "n", unique=unique) == [
        f"cfg-{i}" for i in range(free_ids)
    ]

    p1 = allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1"]], unique=unique)
    assert p1.containers == ((bind("cfg-0", "cfg-a-0"), bind("cfg-1", "cfg-b-0")),)
    pool = written(p1.pools, *pool)
    assert [values(i) for i in pool] == [["C:cfg-0:n", ""], ["C:cfg-1:n", ""]]
    assert configuration_level_devices(CFG, pool, "n", unique=unique) == [
        "cfg-0",
        "cfg-1",
        "cfg-2",
        "cfg-3",
    ]
    for node in "nm":
        assert instance_level_health(pool[0], node) == {"cfg-a-0": False, "cfg-a-1": True}
        assert instance_level_health(pool[1], node) == {"cfg-b-0": False, "cfg-b-1": True}

    pool[0] = allocate_instance_level(pool[0], "m", ["cfg-a-1"])
    assert values(pool[0]) == ["C:cfg-0:n", "m"]
    assert configuration_level_devices(CFG, pool, "n", unique=unique) == ["cfg-0", "cfg-1", "cfg-2"]
    p3 = allocate_configuration_level(CFG, pool, "n", [["cfg-2"]], unique=unique)
    assert p3.containers == ((bind("cfg-2", "cfg-b-1"),),)


def test_worked_example_three_distinct_devices_never_fit() -> None:
    pool = [inst("cfg-a"), inst("cfg-b")]
    assert (
        len(configuration_level_devices(CFG, pool, "n", unique=True)) == 2
    )  # the kubelet never admits 3
    with pytest.raises(AllocationError, match="cannot allocate cfg-2: no other Instance"):
        allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1", "cfg-2"]], unique=True)
    three = allocate_configuration_level(
        CFG, pool, "n", [["cfg-0", "cfg-1", "cfg-2"]], unique=False
    )
    assert [b.instance for b in three.containers[0]] == ["cfg-a", "cfg-b", "cfg-a"]


def test_configuration_level_share_changes_exactly_when_the_list_may() -> None:
    """A slot taken elsewhere while others stay free keeps a unique share (and its list); the
    last grantable slot, a binding of this node, or leaving `nodes` changes it."""
    free = inst("cfg-a", 3)
    taken = inst("cfg-a", 3, "m")
    last = inst("cfg-a", 3, "m", "m", "m")
    bound = inst("cfg-a", 3, "m", "C:cfg-4:n")
    unseen = inst("cfg-a", 3, "m", nodes="m")
    assert configuration_level_share(taken, "n", unique=True) == configuration_level_share(
        free, "n", unique=True
    )
    assert configuration_level_share(taken, "n", unique=False) != configuration_level_share(
        free, "n", unique=False
    )
    for changed in (last, bound, unseen):
        assert configuration_level_share(changed, "n", unique=True) != configuration_level_share(
            taken, "n", unique=True
        )
    for instances in ([free, inst("cfg-b", 2)], [taken, inst("cfg-b", 2)]):
        assert configuration_level_devices(CFG, instances, "n", unique=True) == ["cfg-0", "cfg-1"]


def test_configuration_level_devices_new_ids_take_the_lowest_free_numbers() -> None:
    pool = [inst("cfg-a", 2, "C:cfg-1:n", "C:cfg-10:n"), inst("cfg-b", 3, "C:cfg-0:m")]
    assert configuration_level_devices(CFG, pool, "n", unique=False) == [
        "cfg-0",
        "cfg-1",
        "cfg-2",
        "cfg-10",
    ]
    assert configuration_level_devices(CFG, pool, "m", unique=False) == ["cfg-0", "cfg-1", "cfg-2"]


def test_configuration_level_devices_are_deterministic_and_in_numeric_order() -> None:
    held = [f"C:cfg-{n}:n" for n in (10, 9, 2)]
    pool = [inst("cfg-a", 3, *held), inst("cfg-b", 1), inst("cfg-c", 2, "m")]
    expected = ["cfg-0", "cfg-1", "cfg-2", "cfg-9", "cfg-10"]
    assert configuration_level_devices(CFG, pool, "n", unique=True) == expected
    assert configuration_level_devices(CFG, reversed(pool), "n", unique=True) == expected


def test_configuration_level_new_ids_come_only_from_visible_instances_of_the_configuration() -> (
    None
):
    pool = [
        inst("cfg-a", 2, "C:cfg-0:n", nodes="m"),  # n left, still holds cfg-0
        SlotPool("other-a", "other", 2, ("n",)),
        inst("cfg-b", 1, nodes="n"),
    ]
    assert configuration_level_devices(CFG, pool, "n", unique=False) == ["cfg-0", "cfg-1"]
    one = allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1"]], unique=False)
    assert one.containers == ((bind("cfg-0", "cfg-a-0"), bind("cfg-1", "cfg-b-0")),)
    assert list(one.pools) == ["cfg-b"]
    with pytest.raises(
        AllocationError, match=r"cfg-2: no Instance of cfg seen by n has a free slot$"
    ):
        allocate_configuration_level(CFG, pool, "n", [["cfg-1", "cfg-2"]], unique=False)


def test_configuration_level_re_offer_of_held_ids_is_accepted_without_a_write() -> None:
    pool = [inst("cfg-a", 1, "C:cfg-0:n"), inst("cfg-b", 1, "C:cfg-1:n")]
    for unique in (True, False):
        again = allocate_configuration_level(CFG, pool, "n", [["cfg-1", "cfg-0"]], unique=unique)
        assert again.pools == {}
        assert again.containers == ((bind("cfg-1", "cfg-b-0"), bind("cfg-0", "cfg-a-0")),)


def test_configuration_level_ids_of_other_nodes_are_new_ids_here() -> None:
    pool = [inst("cfg-a", 2, "C:cfg-0:m")]
    alloc = allocate_configuration_level(CFG, pool, "n", [["cfg-0"]], unique=True)
    assert values(alloc.pools["cfg-a"]) == ["C:cfg-0:m", "C:cfg-0:n"]


def test_configuration_level_unique_spreads_over_the_instances_with_most_free_slots() -> None:
    pool = [inst("cfg-a", 2), inst("cfg-b", 3), inst("cfg-c", 3, "m"), inst("cfg-d", 3)]
    alloc = allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1", "cfg-2"]], unique=True)
    assert [b.slot for b in alloc.containers[0]] == ["cfg-b-0", "cfg-d-0", "cfg-a-0"]


def test_configuration_level_non_unique_gives_one_container_several_slots_of_one_instance() -> None:
    pool = [inst("cfg-a", 3), inst("cfg-b", 2, "m", "m")]
    assert configuration_level_devices(CFG, pool, "n", unique=False) == ["cfg-0", "cfg-1", "cfg-2"]
    alloc = allocate_configuration_level(
        CFG, pool, "n", [["cfg-2", "cfg-0", "cfg-1"]], unique=False
    )
    assert [b.slot for b in alloc.containers[0]] == ["cfg-a-0", "cfg-a-1", "cfg-a-2"]
    assert values(alloc.pools["cfg-a"]) == ["C:cfg-2:n", "C:cfg-0:n", "C:cfg-1:n"]


def test_configuration_level_unique_remaps_held_ids_that_share_an_instance() -> None:
    # Two pods each got one slot of A; a new pod is given both ids before reclaim frees them.
    pool = [inst("cfg-a", 2, "C:cfg-0:n", "C:cfg-1:n"), inst("cfg-b", 2)]
    alloc = allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1"]], unique=True)
    assert alloc.containers == ((bind("cfg-0", "cfg-a-0"), bind("cfg-1", "cfg-b-0")),)
    assert [values(i) for i in alloc.pools.values()] == [
        ["C:cfg-0:n", ""],
        ["C:cfg-1:n", ""],
    ]
    kept = allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1"]], unique=False)
    assert kept.pools == {}


def test_configuration_level_unique_fails_only_when_remapping_is_impossible() -> None:
    pool = [inst("cfg-a", 2, "C:cfg-0:n", "C:cfg-1:n"), inst("cfg-b", 1, "m")]
    message = "cannot allocate cfg-1: no other Instance of cfg seen by n has a free slot"
    with pytest.raises(
        AllocationError, match=rf"{message} \(unique devices: this container has 1\)"
    ):
        allocate_configuration_level(CFG, pool, "n", [["cfg-0", "cfg-1"]], unique=True)


@pytest.mark.parametrize("unique", [True, False])
def test_configuration_level_duplicate_bindings_from_a_partial_write_are_resolved(
    unique: bool,
) -> None:
    pool = [inst("cfg-a", 2, "", "C:cfg-1:n"), inst("cfg-b", 2, "C:cfg-1:n")]
    alloc = allocate_configuration_level(CFG, pool, "n", [["cfg-1"]], unique=unique)
    assert alloc.containers == ((bind("cfg-1", "cfg-a-1"),),)
    assert values(alloc.pools["cfg-b"]) == ["", ""]


def test_configuration_level_allocate_converges_after_a_partial_write() -> None:
    pool = [inst("cfg-a"), inst("cfg-b"), inst("cfg-c")]
    request = [["cfg-0", "cfg-1", "cfg-2"]]
    plan = allocate_configuration_level(CFG, pool, "n", request, unique=True)
    assert list(plan.pools) == ["cfg-a", "cfg-b", "cfg-c"]
    partial = [plan.pools["cfg-b"] if i.name == "cfg-b" else i for i in pool]  # A, C got 409
    again = allocate_configuration_level(CFG, partial, "n", request, unique=True)
    assert list(again.pools) == ["cfg-a", "cfg-c"]
    assert again.containers == plan.containers
    final = written(again.pools, *partial)
    assert allocate_configuration_level(CFG, final, "n", request, unique=True).pools == {}


def test_configuration_level_containers_of_one_request_see_each_others_slots() -> None:
    pool = [inst("cfg-a"), inst("cfg-b", 1)]
    alloc = allocate_configuration_level(
        CFG, pool, "n", [["cfg-0", "cfg-1"], ["cfg-2"], ["cfg-0"]], unique=True
    )
    assert alloc.containers == (
        (bind("cfg-0", "cfg-a-0"), bind("cfg-1", "cfg-b-0")),
        (bind("cfg-2", "cfg-a-1"),),
        (bind("cfg-0", "cfg-a-0"),),  # an init container's device re-offered
    )
    with pytest.raises(AllocationError):
        allocate_configuration_level(
            CFG, pool, "n", [["cfg-0", "cfg-1"], ["cfg-2", "cfg-3"]], unique=True
        )


def test_configuration_level_allocate_skips_instances_at_capacity() -> None:
    pool = [inst("cfg-a", 1, "", "m"), inst("cfg-b", 2, "C:x")]  # A lowered from 2 to 1
    assert configuration_level_devices(CFG, pool, "n", unique=False) == ["cfg-0"]
    alloc = allocate_configuration_level(CFG, pool, "n", [["cfg-0"]], unique=False)
    assert alloc.containers == ((bind("cfg-0", "cfg-b-1"),),)


def test_configuration_level_allocate_refuses_ids_that_are_not_of_the_configuration() -> None:
    with pytest.raises(AllocationError, match="'other-0' is not a device of Configuration cfg"):
        allocate_configuration_level(CFG, [inst("cfg-a")], "n", [["other-0"]], unique=True)


# --- releasing (§5.5, §7) --------------------------------------------------------------------


def test_holdings_name_devices_as_the_kubelet_does() -> None:
    pool = [inst("cfg-a", 3, "n", "C:cfg-4:n", "m"), inst("cfg-b", 2, "C:x", "C:cfg-0:m")]
    assert holdings(pool, "n") == {
        Holding("akri.sh/cfg-a", "cfg-a-0"),
        Holding("akri.sh/cfg", "cfg-4"),
    }
    assert holdings(pool, "m") == {
        Holding("akri.sh/cfg-a", "cfg-a-2"),
        Holding("akri.sh/cfg", "cfg-0"),
    }


def test_release_frees_every_slot_of_the_node_only() -> None:
    a = inst("cfg-a", 5, "n", "C:cfg-0:n", "m", "C:cfg-1:m", "C:x")
    assert values(release(a, "n")) == ["", "", "m", "C:cfg-1:m", "C:x"]
    assert release(a, "z") is a


def test_release_only_given_holdings() -> None:
    a = inst("cfg-a", 4, "n", "C:cfg-0:n", "n", "m")
    only = {Holding("akri.sh/cfg", "cfg-0"), Holding("akri.sh/cfg-a", "cfg-a-2")}
    assert values(release(a, "n", only)) == ["n", "", "", "m"]
    assert release(a, "n", {Holding("akri.sh/cfg-a", "cfg-a-3")}) is a  # m's slot


def test_scrub_node_removes_it_from_nodes_and_frees_its_slots() -> None:
    a = inst("cfg-a", 3, "m", "C:cfg-0:m", "n", nodes="n m k")
    scrubbed = scrub_node(a, "m")
    assert scrubbed.nodes == ("n", "k")
    assert values(scrubbed) == ["", "", "n"]
    assert scrub_node(scrubbed, "m") == scrubbed


def test_leaving_keeps_the_slots_and_the_last_node_leaves_it_disposable_once_free() -> None:
    a = inst("cfg-a", 3, "m", "C:cfg-0:n", nodes="n m")
    assert leave(a, "m").nodes == ("n",)
    assert leave(a, "m").usage == a.usage
    gone = leave(leave(a, "m"), "n")
    assert gone.nodes == ()
    assert not disposable(gone)
    assert disposable(release(release(gone, "m"), "n"))
    assert disposable(SlotPool("cfg-b", CFG, 1, (), {"cfg-b-0": "C:x"}))  # nobody to wait for


def test_a_terminating_instance_keeps_its_holders_and_grants_nothing() -> None:
    a = replace(inst("cfg-a", 3, "m"), terminating=True)
    assert a.grantable == ()
    assert set(instance_level_health(a, "m").values()) == {False}
    held = replace(inst("cfg-a", 1, "C:cfg-0:n"), terminating=True)
    assert configuration_level_devices(CFG, [held], "n", unique=False) == []
    with pytest.raises(AllocationError):
        allocate_instance_level(a, "n", ["cfg-a-1"])
    assert allocate_instance_level(a, "m", ["cfg-a-0"]) is a  # the kubelet re-offering what m holds
    assert allocate_configuration_level(CFG, [held], "n", [["cfg-0"]], unique=True).pools == {}


@pytest.mark.parametrize(
    ("usage", "terminating", "current", "expected"),
    [
        ((), False, [], []),
        (("n",), False, [], [SLOTS_FINALIZER]),
        (("", "C:cfg-0:n"), False, ["x"], ["x", SLOTS_FINALIZER]),
        (("n",), False, [SLOTS_FINALIZER, "x"], [SLOTS_FINALIZER, "x"]),
        (("",), False, ["x", SLOTS_FINALIZER], ["x"]),
        (("C:x",), False, [SLOTS_FINALIZER], []),
        (("n",), True, [SLOTS_FINALIZER], [SLOTS_FINALIZER]),
        (("n",), True, ["x"], ["x"]),  # the API refuses new finalizers while deleting
        ((), True, [SLOTS_FINALIZER], []),
    ],
)
def test_the_slots_finalizer_is_there_exactly_while_a_slot_is_held(
    usage: tuple[str, ...], terminating: bool, current: list[str], expected: list[str]
) -> None:
    instance = replace(inst("cfg-a", 2, *usage), terminating=terminating)
    assert finalizers(instance, current) == expected
