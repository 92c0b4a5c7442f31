"""What a discovery round reads of an Instance (`publisher.reads`): the runner starts a round only
when that changes, so equal reads must mean equal decisions, whatever else changed."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from akri.agent.offline_reports import reported
from akri.agent.publisher import reads
from akri.agent.reconcile import Plan, plan, wanted_instances
from akri.api import (
    Configuration,
    ConfigurationSpec,
    DiscoveryHandlerInfo,
    Instance,
    InstanceConditionType,
    InstanceSpec,
    InstanceStatus,
    ObjectMeta,
    OwnerReference,
)
from akri.api.reports import NodeProblem, NodeReport
from akri.discovery.model import Device
from akri.naming import instance_name, slot_id

NODE = "node-b"
NODES = ("node-a", NODE, "node-c")
DEVICES = ("dev0", "dev1")
UID, OLD_UID = "uid-1", "uid-0"


def configuration(capacity: int) -> Configuration:
    return Configuration(
        metadata=ObjectMeta(name="cfg", namespace="default", uid=UID, generation=1),
        spec=ConfigurationSpec(
            discovery_handler=DiscoveryHandlerInfo(name="debugEcho"),
            capacity=capacity,
            broker_properties={"B": "1"},
        ),
    )


NAMES = sorted(
    {instance_name("cfg", d) for d in DEVICES} | {instance_name("cfg", d, NODE) for d in DEVICES}
)


def rarely(draw: st.DrawFn) -> bool:
    """One time in five: most Instances belong to the Configuration, so plans differ."""
    return draw(st.integers(0, 4)) == 0


@st.composite
def instances(draw: st.DrawFn, name: str) -> Instance:
    """Any state the Instance `name` can be in, slots and other nodes' rows included."""
    capacity = draw(st.integers(1, 4))
    keys = [slot_id(name, i) for i in range(5)] + [f"{name}-07", "other-0"]
    holders = st.sampled_from(["", NODE, "node-a", "C:cfg-1:node-c", "x:y"])
    usage = {key: draw(holders) for key in keys[:capacity]}  # mostly keys as they should be
    usage |= draw(st.dictionaries(st.sampled_from(keys), holders, max_size=2))
    offline = InstanceConditionType.DEVICE_OFFLINE
    rows = [
        NodeReport(node=node, problems=[NodeProblem(type=offline, message=message)])
        for node, message in draw(
            st.dictionaries(st.sampled_from(NODES), st.sampled_from(["gone", "gone long"]))
        ).items()
    ]
    return Instance(
        metadata=ObjectMeta(
            name=name,
            namespace="default",
            resource_version=str(draw(st.integers(1, 10**6))),
            deletion_timestamp=datetime(2026, 1, 1, tzinfo=UTC) if rarely(draw) else None,
            owner_references=[
                OwnerReference(
                    api_version="akri.sh/v0",
                    kind="Configuration",
                    name="cfg",
                    uid=OLD_UID if rarely(draw) else UID,
                )
            ],
        ),
        spec=InstanceSpec(
            configuration_name="cfg",
            shared=draw(st.booleans()),
            nodes=draw(st.lists(st.sampled_from(NODES), unique=True, max_size=3)),
            capacity=capacity,
            device_usage=usage,
            broker_properties=draw(st.sampled_from([{}, {"B": "1", "P": "x"}])),
        ),
        status=InstanceStatus(nodes=rows),
    )


def decisions(
    cfg: Configuration, shared: bool, devices: list[Device], cached: dict[str, Instance]
) -> tuple[Plan, dict[str, str | None], int]:
    """What a round decides from the cache: the plan, the DeviceOffline rows it compares
    with, and the Instances it counts as this node's."""
    wanted, _ = wanted_instances(cfg, NODE, shared, devices)
    stored = {name: reported(i, NODE) for name, i in cached.items()}
    mine = sum(NODE in i.spec.nodes for i in cached.values())
    return plan(cfg, NODE, shared, wanted, cached.values()), stored, mine


PARTS = (
    "deletion_timestamp",
    "owner_references",
    "resource_version",
    "status",
    *InstanceSpec.model_fields,
)


def changed(current: Instance | None, new: Instance, part: str) -> Instance:
    """`current` with one part taken from `new`: one field of metadata, spec or the status
    (all of `new` when there is no `current`)."""
    if current is None:
        return new
    if part == "status":
        return current.model_copy(update={"status": new.status})
    if part in InstanceSpec.model_fields:
        spec = current.spec.model_copy(update={part: getattr(new.spec, part)})
        return current.model_copy(update={"spec": spec})
    metadata = current.metadata.model_copy(update={part: getattr(new.metadata, part)})
    return current.model_copy(update={"metadata": metadata})


@settings(max_examples=150, deadline=None)
@given(
    capacity=st.integers(1, 4),
    shared=st.booleans(),
    seen=st.lists(st.sampled_from(DEVICES), unique=True),
    changes=st.lists(
        st.sampled_from(NAMES).flatmap(
            lambda name: st.tuples(
                st.just(name),
                instances(name),
                st.sampled_from(PARTS),
                st.integers(0, 9),  # 0: a delete
            )
        ),
        min_size=5,
        max_size=40,
    ),
)
def test_a_change_that_keeps_the_reads_keeps_every_decision(
    capacity: int,
    shared: bool,
    seen: list[str],
    changes: list[tuple[str, Instance, str, int]],
) -> None:
    """Random creates, deletes and changes of one part: deciding only when a change alters
    what the round reads of its Instance gives the decisions deciding after every change gives."""
    cfg = configuration(capacity)
    devices = [Device(d, {"P": "x"}) for d in seen]
    cached: dict[str, Instance] = {}
    known: dict[str, tuple[object, ...]] = {}
    last = decisions(cfg, shared, devices, cached)
    for name, new, part, delete in changes:
        instance = changed(cached.pop(name, None), new, part) if delete else None
        before = known.pop(name, None)
        if instance is not None:
            cached[name] = instance
            known[name] = reads(instance, NODE)
        if known.get(name) != before:
            last = decisions(cfg, shared, devices, cached)
        assert last == decisions(cfg, shared, devices, cached)


DEV0 = instance_name("cfg", "dev0")


def dev0(**slots: str) -> Instance:
    """dev0's Instance as this Configuration (capacity 2) makes it, listing only NODE, with
    the slots named (s0: index 0, ...)."""
    owner = OwnerReference(api_version="akri.sh/v0", kind="Configuration", name="cfg", uid=UID)
    spec = InstanceSpec(
        configuration_name="cfg",
        shared=True,
        nodes=[NODE],
        capacity=2,
        device_usage={slot_id(DEV0, int(s[1:])): holder for s, holder in slots.items()},
        broker_properties={"B": "1", "P": "x"},
    )
    metadata = ObjectMeta(name=DEV0, namespace="default", owner_references=[owner])
    return Instance(metadata=metadata, spec=spec)


def test_slots_taken_below_capacity_keep_the_reads_and_past_it_do_not() -> None:
    """The filter can skip: a slot taken below capacity is not read; the free key past a
    lowered capacity is (this node drops it)."""
    instance = dev0(s0="", s1="")
    assert reads(dev0(s0="node-a", s1=""), NODE) == reads(instance, NODE)
    assert reads(dev0(s0="", s1="", s2="node-a"), NODE) == reads(instance, NODE)
    assert reads(dev0(s0="", s1="", s2=""), NODE) != reads(instance, NODE)


def test_the_reads_tell_apart_what_random_changes_rarely_meet() -> None:
    """A capacity lowered under a held slot keeps the keys settled, and brokerProperties
    matter only to the first node listed: both change the plan, so both are read."""
    cfg, instance = configuration(2), dev0(s0="", s1="node-a")
    devices = [Device("dev0", {"P": "x"})]
    changes: list[dict[str, object]] = [{"capacity": 1}, {"broker_properties": {}}]
    for change in changes:
        other = instance.model_copy(update={"spec": instance.spec.model_copy(update=change)})
        assert decisions(cfg, True, devices, {DEV0: other}) != decisions(
            cfg, True, devices, {DEV0: instance}
        )
        assert reads(other, NODE) != reads(instance, NODE)
