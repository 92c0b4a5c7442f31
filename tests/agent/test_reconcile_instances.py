"""Pure decisions: which Instances a node creates, joins, updates and leaves for its devices."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from akri.agent.reconcile import (
    MAX_PROPERTIES_BYTES,
    MAX_PROPERTY_VALUE_BYTES,
    Delete,
    Plan,
    belongs,
    joined,
    left,
    plan,
    usable_properties,
    wanted_instances,
)
from akri.api import (
    Configuration,
    ConfigurationSpec,
    DiscoveryHandlerInfo,
    Instance,
    ObjectMeta,
    OwnerReference,
)
from akri.discovery.model import Device
from akri.naming import instance_name

NODE_A, NODE_B = "node-a", "node-b"


def config(capacity: int = 2, uid: str = "uid-1", **broker: str) -> Configuration:
    return Configuration(
        metadata=ObjectMeta(name="cfg", namespace="default", uid=uid, generation=1),
        spec=ConfigurationSpec(
            discovery_handler=DiscoveryHandlerInfo(name="debugEcho"),
            capacity=capacity,
            broker_properties=broker,
        ),
    )


def device(id: str, **properties: str) -> Device:
    return Device(id, properties)


def stored(instance: Instance, version: int = 1) -> Instance:
    """`instance` as the API server returns it."""
    metadata = instance.metadata.model_copy(update={"resource_version": str(version)})
    return instance.model_copy(update={"metadata": metadata})


def existing(
    configuration: Configuration, node: str, id: str, *, shared: bool = True, **props: str
) -> Instance:
    """The Instance `node` creates for device `id`."""
    wanted, _ = wanted_instances(configuration, node, shared, [device(id, **props)])
    (want,) = wanted.values()
    created = plan(configuration, node, shared, wanted, []).create
    assert [i.metadata.name for i in created] == [want.name]
    return stored(created[0])


def with_spec(instance: Instance, **changes: object) -> Instance:
    spec = instance.spec.model_copy(update=changes)
    return instance.model_copy(update={"spec": spec})


def decide(
    configuration: Configuration,
    node: str,
    devices: list[Device],
    instances: list[Instance],
    shared: bool = True,
) -> Plan:
    wanted, _ = wanted_instances(configuration, node, shared, devices)
    return plan(configuration, node, shared, wanted, instances)


# --- names and new Instances ------------------------------------------------------------------


def test_shared_devices_are_named_by_id_only() -> None:
    wanted, _ = wanted_instances(config(), NODE_A, True, [device("foo0"), device("foo1")])
    assert sorted(wanted) == ["cfg-8120fe", "cfg-a19705"]


def test_local_devices_are_named_by_id_and_node() -> None:
    a, _ = wanted_instances(config(), NODE_A, False, [device("foo0")])
    b, _ = wanted_instances(config(), NODE_B, False, [device("foo0")])
    assert list(a) == [instance_name("cfg", "foo0", NODE_A)]
    assert list(b) == [instance_name("cfg", "foo0", NODE_B)]
    assert a.keys() != b.keys()


def test_two_devices_with_one_instance_name_publish_the_smaller_id_and_say_so() -> None:
    first, second = "dev374", "dev452"  # their digests share the 6 hex digits a name keeps
    assert instance_name("cfg", first) == instance_name("cfg", second) == "cfg-bd637a"

    for seen in ([device(first), device(second)], [device(second), device(first)]):
        wanted, problems = wanted_instances(config(), NODE_A, True, [*seen, device("foo0")])

        assert sorted(wanted) == ["cfg-8120fe", "cfg-bd637a"]
        assert wanted["cfg-bd637a"].device.id == first
        assert problems == [
            "devices 'dev374' and 'dev452' both get the Instance name cfg-bd637a; "
            "only 'dev374' is published"
        ]


def test_new_devices_become_instances_listing_this_node() -> None:
    cfg = config(capacity=3, SHARED="config", ONLY_CONFIG="x")
    result = decide(cfg, NODE_A, [device("foo0", SHARED="device", KEY="v")], [])
    (instance,) = result.create
    assert (result.join, result.leave, result.missing) == ([], [], [])
    assert instance.metadata.name == "cfg-8120fe"
    assert instance.spec.nodes == [NODE_A]
    assert instance.spec.shared
    assert instance.spec.capacity == 3
    assert instance.spec.broker_properties == {"SHARED": "config", "ONLY_CONFIG": "x", "KEY": "v"}
    assert instance.spec.device_usage == {f"cfg-8120fe-{i}": "" for i in range(3)}
    assert instance.metadata.owner_references[0].uid == "uid-1"


def test_nothing_to_do_when_the_instances_match() -> None:
    cfg = config()
    instances = [existing(cfg, NODE_A, "foo0"), existing(cfg, NODE_A, "foo1")]
    result = decide(cfg, NODE_A, [device("foo0"), device("foo1")], instances)
    assert not result
    assert result == Plan()


# --- joining and following the Configuration --------------------------------------------------


def test_a_second_node_joins_a_shared_instance() -> None:
    cfg = config()
    instance = existing(cfg, NODE_A, "foo0")
    result = decide(cfg, NODE_B, [device("foo0")], [instance])
    assert [w.name for w in result.join] == ["cfg-8120fe"]
    assert result.create == []
    updated = joined(instance, cfg, NODE_B, result.join[0].properties)
    assert updated is not None
    assert updated.spec.nodes == [NODE_A, NODE_B]
    assert joined(stored(updated, 2), cfg, NODE_B, result.join[0].properties) is None


def test_only_the_first_node_writes_the_device_properties() -> None:
    """Nodes that see a shared device differently must not overwrite each other forever."""
    cfg = config()
    instance = with_spec(existing(cfg, NODE_A, "foo0", URL="seen-by-a"), nodes=[NODE_A, NODE_B])
    b_view = {"URL": "seen-by-b"}
    assert joined(instance, cfg, NODE_B, b_view) is None
    a_view = {"URL": "seen-by-a-now"}
    updated = joined(instance, cfg, NODE_A, a_view)
    assert updated is not None
    assert updated.spec.broker_properties == a_view
    # Once node-a leaves, node-b is first and its view is written.
    without_a = with_spec(instance, nodes=[NODE_B])
    assert joined(without_a, cfg, NODE_B, b_view) == with_spec(without_a, broker_properties=b_view)


RESIZES = [
    ({"i-0": "", "i-1": ""}, 3, {"i-0": "", "i-1": "", "i-2": ""}),
    ({"i-0": "", "i-1": "", "i-2": ""}, 1, {"i-0": ""}),
    ({"i-0": "", "i-1": "", "i-2": "node-b"}, 1, {"i-0": "", "i-2": "node-b"}),
    ({"i-1": "C:cfg-0:node-a"}, 1, {"i-0": "", "i-1": "C:cfg-0:node-a"}),
    ({}, 2, {"i-0": "", "i-1": ""}),
    ({"i-0": "node-a", "junk": ""}, 1, {"i-0": "node-a"}),
    ({"i-0": "node-a", "junk": "x"}, 1, {"i-0": "node-a", "junk": "x"}),
    (
        {"i-0": "", "i-1": "node-a", "i-2": "node-b"},
        2,
        {"i-0": "", "i-1": "node-a", "i-2": "node-b"},
    ),
    ({"i-0": "", "i-01": ""}, 1, {"i-0": ""}),
]


def named_i(configuration: Configuration, usage: dict[str, str], capacity: int) -> Instance:
    """An Instance named `i` of `configuration` seen by NODE_A, with this usage and capacity."""
    instance = existing(configuration, NODE_A, "foo0")
    instance = instance.model_copy(
        update={"metadata": instance.metadata.model_copy(update={"name": "i"})}
    )
    return with_spec(instance, device_usage=usage, capacity=capacity)


@pytest.mark.parametrize(("usage", "capacity", "expected"), RESIZES)
def test_slot_keys_follow_the_capacity_but_held_slots_stay(
    usage: dict[str, str], capacity: int, expected: dict[str, str]
) -> None:
    cfg = config(capacity=capacity)
    instance = named_i(cfg, usage, 99)
    updated = joined(instance, cfg, NODE_A, instance.spec.broker_properties)
    assert updated is not None
    assert updated.spec.capacity == capacity
    assert updated.spec.device_usage == expected


@pytest.mark.parametrize(("usage", "capacity", "expected"), RESIZES)
def test_slot_keys_are_rewritten_exactly_when_they_do_not_follow_the_capacity(
    usage: dict[str, str], capacity: int, expected: dict[str, str]
) -> None:
    cfg = config(capacity=capacity)
    instance = named_i(cfg, usage, capacity)  # the capacity is current, the keys may not be
    updated = joined(instance, cfg, NODE_A, instance.spec.broker_properties)
    if usage == expected:
        assert updated is None
    else:
        assert updated is not None
        assert updated.spec.device_usage == expected


def test_capacity_and_broker_properties_changes_reach_existing_instances() -> None:
    old = config(capacity=2, MODE="a")
    instance = existing(old, NODE_A, "foo0", KEY="v")
    new = config(capacity=3, MODE="b")
    result = decide(new, NODE_A, [device("foo0", KEY="v")], [instance])
    (want,) = result.join
    updated = joined(instance, new, NODE_A, want.properties)
    assert updated is not None
    assert updated.spec.capacity == 3
    assert updated.spec.broker_properties == {"KEY": "v", "MODE": "b"}
    assert len(updated.spec.device_usage) == 3


# --- leaving --------------------------------------------------------------------------------


def test_missing_local_devices_are_left_at_once_shared_ones_wait() -> None:
    cfg = config()
    shared = existing(cfg, NODE_A, "foo0")
    local = existing(cfg, NODE_A, "foo1", shared=False)
    result = decide(cfg, NODE_A, [], [shared, local])
    assert result.leave == [local.metadata.name]
    assert result.missing == [shared.metadata.name]
    assert (result.create, result.join) == ([], [])


def test_instances_without_this_node_are_not_left() -> None:
    cfg = config()
    other = existing(cfg, NODE_B, "foo0")
    assert not decide(cfg, NODE_A, [], [other])


HELD = {"cfg-8120fe-0": NODE_A, "cfg-8120fe-1": f"C:cfg-0:{NODE_A}", "cfg-8120fe-2": NODE_B}


def test_leaving_keeps_the_slots_of_running_containers() -> None:
    """docs/design.md §5.5: the device going offline does not stop the containers using it."""
    cfg = config(capacity=3)
    instance = with_spec(existing(cfg, NODE_A, "foo0"), nodes=[NODE_A, NODE_B], device_usage=HELD)
    updated = left(instance, NODE_A)
    assert isinstance(updated, Instance)
    assert updated.spec.nodes == [NODE_B]
    assert updated.spec.device_usage == HELD


def test_the_last_node_deletes_at_the_version_it_saw() -> None:
    instance = stored(existing(config(), NODE_A, "foo0"), version=7)
    assert left(instance, NODE_A) == Delete("7")
    assert left(instance, NODE_B) is None


@pytest.mark.parametrize("holder", [NODE_A, f"C:cfg-0:{NODE_A}", NODE_B])
def test_the_last_node_keeps_an_instance_whose_slots_are_held(holder: str) -> None:
    instance = stored(
        with_spec(existing(config(), NODE_A, "foo0"), device_usage={"cfg-8120fe-0": holder}), 3
    )
    updated = left(instance, NODE_A)
    assert isinstance(updated, Instance)
    assert updated.spec.nodes == []
    assert updated.spec.device_usage == {"cfg-8120fe-0": holder}


def test_a_corrupt_slot_keeps_nothing() -> None:
    instance = stored(
        with_spec(existing(config(), NODE_A, "foo0"), device_usage={"cfg-8120fe-0": "C:x"}), 3
    )
    assert left(instance, NODE_A) == Delete("3")


def test_two_nodes_leaving_at_once_end_in_one_delete() -> None:
    """Both decide on the same version; the guarded write lets one win, the other re-decides."""
    both = stored(with_spec(existing(config(), NODE_A, "foo0"), nodes=[NODE_A, NODE_B]), 1)
    a_wins = left(both, NODE_A)
    assert isinstance(a_wins, Instance)
    assert isinstance(left(both, NODE_B), Instance)  # node-b's write is refused with 409 ...
    assert left(stored(a_wins, 2), NODE_B) == Delete("2")  # ... and on the fresh copy it deletes


def test_an_instance_being_deleted_is_left_to_the_collector() -> None:
    cfg = config()
    instance = existing(cfg, NODE_A, "foo0")
    dying = instance.model_copy(
        update={
            "metadata": instance.metadata.model_copy(
                update={"deletion_timestamp": datetime.now(UTC)}
            )
        }
    )
    assert not belongs(dying, cfg)
    assert left(dying, NODE_A) is None
    assert joined(dying, cfg, NODE_A, {}) is None
    assert not decide(cfg, NODE_A, [device("foo0")], [dying])
    assert not decide(cfg, NODE_A, [], [dying])


def test_an_instance_of_an_earlier_configuration_of_the_same_name_is_not_touched() -> None:
    old = existing(config(uid="old"), NODE_A, "foo0")
    new = config(uid="new")
    assert not belongs(old, new)
    assert not decide(new, NODE_A, [device("foo0")], [old])  # no create (409), no join
    assert not decide(new, NODE_A, [], [old])
    owned = old.model_copy(
        update={
            "metadata": old.metadata.model_copy(
                update={
                    "owner_references": [
                        OwnerReference(
                            api_version="akri.sh/v0", kind="Configuration", name="cfg", uid="new"
                        )
                    ]
                }
            )
        }
    )
    assert belongs(owned, new)


# --- properties -------------------------------------------------------------------------------


def test_huge_values_are_dropped_and_odd_keys_kept_with_a_warning() -> None:
    huge = "x" * (MAX_PROPERTY_VALUE_BYTES + 1)
    fitting = "y" * MAX_PROPERTY_VALUE_BYTES
    result = usable_properties(device("d", OK="1", BLOB=huge, FITS=fitting, **{"not-env": "2"}))
    assert result.properties == {"OK": "1", "FITS": fitting, "not-env": "2"}
    assert len(result.problems) == 2
    assert "'BLOB' dropped" in result.problems[0]
    assert "'not-env' is not an env var name" in result.problems[1]
    assert usable_properties(device("d", OK="1")).problems == []


def test_properties_past_the_total_limit_are_dropped_in_key_order() -> None:
    value = "v" * (MAX_PROPERTY_VALUE_BYTES - 3)  # with its 3-character key: the value limit
    count = MAX_PROPERTIES_BYTES // MAX_PROPERTY_VALUE_BYTES
    many = {f"K{i:02}": value for i in range(count + 3)}
    result = usable_properties(device("d", **many))
    assert list(result.properties) == [f"K{i:02}" for i in range(count)]
    assert result.problems == [
        f"device 'd': property 'K{count:02}' and those after it dropped: the properties pass "
        f"{MAX_PROPERTIES_BYTES} bytes in all"
    ]


def test_property_problems_are_reported_with_the_wanted_instances() -> None:
    wanted, problems = wanted_instances(config(), NODE_A, True, [device("foo0", **{"a-b": "1"})])
    assert wanted["cfg-8120fe"].properties == {"a-b": "1"}
    assert len(problems) == 1
    assert "foo0" in problems[0]


# --- convergence ------------------------------------------------------------------------------


def apply(
    configuration: Configuration,
    node: str,
    shared: bool,
    devices: list[Device],
    instances: dict[str, Instance],
) -> None:
    """Carry out one plan as the publisher would (missing shared devices stay, in grace)."""
    wanted, _ = wanted_instances(configuration, node, shared, devices)
    result = plan(configuration, node, shared, wanted, instances.values())
    for instance in result.create:
        instances[instance.metadata.name or ""] = stored(instance)
    for want in result.join:
        updated = joined(instances[want.name], configuration, node, want.properties)
        assert updated is not None
        instances[want.name] = updated
    for name in result.leave:
        decision = left(instances[name], node)
        if isinstance(decision, Delete):
            del instances[name]
        elif decision is not None:
            instances[name] = decision


ROUNDS = st.lists(
    st.tuples(
        st.sampled_from([NODE_A, NODE_B]),
        st.lists(st.sampled_from(["d0", "d1", "d2"]), unique=True),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=8,
)


@given(rounds=ROUNDS, shared=st.booleans())
def test_applying_a_plan_leaves_nothing_to_do(
    rounds: list[tuple[str, list[str], int]], shared: bool
) -> None:
    """Whatever nodes saw before, one round converges: planning again writes nothing."""
    instances: dict[str, Instance] = {}
    for node, ids, capacity in rounds:
        cfg = config(capacity=capacity)
        devices = [device(i, P=i) for i in ids]
        apply(cfg, node, shared, devices, instances)
        again = decide(cfg, node, devices, list(instances.values()), shared)
        assert (again.create, again.join, again.leave) == ([], [], [])
        for instance in instances.values():
            assert instance.spec.nodes, "an Instance no node sees must be deleted"
            assert len(set(instance.spec.nodes)) == len(instance.spec.nodes)
        mine = {n for n, i in instances.items() if node in i.spec.nodes}
        wanted, _ = wanted_instances(cfg, node, shared, devices)
        assert wanted.keys() <= mine
        assert mine - wanted.keys() == set(again.missing)
