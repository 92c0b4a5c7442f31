"""Which plugins a node should run: the manager's pure decision, kept one Instance at a time."""

from __future__ import annotations

from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from akri import naming
from akri.agent.plugins.desired import (
    ConfigurationLookup,
    Decided,
    DesiredPlugins,
    Key,
    Level,
    PluginSpec,
)
from akri.api import Configuration, Instance, InstanceSpec, ObjectMeta
from tests.agent.conftest import configuration

NODE = "node-a"


def instance(
    config: str, device: str, nodes: list[str], namespace: str = "default", name: str = ""
) -> Instance:
    return Instance(
        metadata=ObjectMeta(name=name or naming.instance_name(config, device), namespace=namespace),
        spec=InstanceSpec(configuration_name=config, nodes=nodes),
    )


def lookup(
    *configs: Configuration, namespace: str = "default"
) -> dict[tuple[str, str], Configuration]:
    return {(namespace, c.metadata.name or ""): c for c in configs}


def desired_plugins(
    instances: Iterable[Instance], node: str, configurations: ConfigurationLookup
) -> tuple[DesiredPlugins, Decided]:
    desired = DesiredPlugins(node, configurations)
    return desired, desired.rebuild(instances)


def key(instance: Instance) -> Key:
    return instance.metadata.namespace or "", instance.metadata.name or ""


def test_an_instance_level_plugin_per_instance_and_one_per_configuration() -> None:
    instances = [
        instance("cam", "foo0", [NODE, "node-b"]),
        instance("cam", "foo1", [NODE]),
        instance("cam", "foo2", ["node-b"]),  # not seen here
        instance("usb", "dev", ["node-b"]),  # no Instance of usb on this node
    ]
    configs = lookup(configuration("cam", unique=False), configuration("usb"))

    desired, decided = desired_plugins(instances, NODE, lambda ns, name: configs.get((ns, name)))

    assert desired.plugins == {
        "akri.sh/cam-8120fe": PluginSpec("default", Level.INSTANCE, "cam-8120fe"),
        "akri.sh/cam-a19705": PluginSpec("default", Level.INSTANCE, "cam-a19705"),
        "akri.sh/cam": PluginSpec("default", Level.CONFIGURATION, "cam", unique=False),
    }
    assert decided.problems == []
    assert decided.resources == set(desired.plugins)


def test_instances_of_an_unknown_configuration_are_not_served() -> None:
    desired, decided = desired_plugins([instance("cam", "foo0", [NODE])], NODE, lambda *_: None)
    assert desired.plugins == {}
    assert decided.resources == set()


def test_names_that_cannot_be_resources_are_reported() -> None:
    long = "c" * 60  # the Configuration fits, its Instances do not
    configs = lookup(configuration(long))
    desired, decided = desired_plugins(
        [instance(long, "foo0", [NODE])], NODE, lambda ns, name: configs.get((ns, name))
    )
    assert list(desired.plugins) == [naming.resource_name(long)]
    (problem,) = decided.problems
    assert "is 67 characters, the limit is 63" in problem


def test_one_resource_name_is_never_served_twice() -> None:
    """Equal names in two namespaces, and an Instance named like a Configuration."""
    instances = [
        instance("cam", "foo0", [NODE], namespace="b"),
        instance("cam", "foo0", [NODE], namespace="a"),
        instance("cam", "x", [NODE], namespace="a", name="cam"),
    ]
    configs = {
        **lookup(configuration("cam"), namespace="a"),
        **lookup(configuration("cam"), namespace="b"),
    }

    desired, decided = desired_plugins(instances, NODE, lambda ns, name: configs.get((ns, name)))
    again, _ = desired_plugins(reversed(instances), NODE, lambda ns, name: configs.get((ns, name)))

    assert desired.plugins == again.plugins  # the order Instances are seen in does not matter
    assert desired.plugins == {
        "akri.sh/cam": PluginSpec("a", Level.CONFIGURATION, "cam"),
        "akri.sh/cam-8120fe": PluginSpec("a", Level.INSTANCE, "cam-8120fe"),
    }
    assert len(decided.problems) == 3
    assert all("is served by" in problem for problem in decided.problems)

    # The winner's Instance goes: the clashing one in namespace b takes the resource over.
    gone = desired.update({key(instances[1]): None})
    assert desired.plugins["akri.sh/cam-8120fe"] == PluginSpec("b", Level.INSTANCE, "cam-8120fe")
    assert "akri.sh/cam-8120fe" in gone.resources


def test_a_spec_says_what_it_serves() -> None:
    spec = PluginSpec("default", Level.CONFIGURATION, "cam")
    assert spec.resource == "akri.sh/cam"
    assert str(spec) == "configuration plugin akri.sh/cam (default/cam)"


def test_only_what_an_instance_changes_is_decided_again() -> None:
    configs = lookup(configuration("cam"))
    first, second = instance("cam", "foo0", [NODE]), instance("cam", "foo1", [NODE])
    desired, _ = desired_plugins([first, second], NODE, lambda ns, name: configs.get((ns, name)))

    moved = second.model_copy(update={"spec": second.spec.model_copy(update={"capacity": 5})})
    assert desired.update({key(second): moved}).resources == set()  # nothing to restart

    left = desired.update({key(second): instance("cam", "foo1", ["node-b"])})
    assert left.resources == {naming.resource_name(key(second)[1])}
    assert "akri.sh/cam" in desired.plugins  # the first Instance still calls for it

    last = desired.update({key(first): None})
    assert last.resources == {naming.resource_name(key(first)[1]), "akri.sh/cam"}
    assert desired.plugins == {}


DEVICES = ["foo0", "foo1", "foo2"]
NAMESPACES = ["a", "b"]
CONFIGS = {
    (namespace, name): configuration(name, unique=unique)
    for namespace in NAMESPACES
    for name, unique in (("cam", True), ("usb", False))
}
some_instance = st.builds(
    instance,
    config=st.sampled_from(["cam", "usb", "gone"]),
    device=st.sampled_from(DEVICES),
    nodes=st.lists(st.sampled_from([NODE, "node-b"]), unique=True),
    namespace=st.sampled_from(NAMESPACES),
    # Some Instances are named like a Configuration, so that resource names clash.
    name=st.sampled_from(["", "", "", "cam", "usb"]),
)


@given(st.lists(st.tuples(some_instance, st.booleans()), max_size=30))
def test_one_instance_at_a_time_decides_as_everything_at_once(
    history: list[tuple[Instance, bool]],
) -> None:
    """Any history of Instances appearing, changing and going, applied one by one, ends in
    the plugins a fresh decision over the final Instances gives."""
    lookup_config: ConfigurationLookup = lambda ns, name: CONFIGS.get((ns, name))  # noqa: E731
    incremental = DesiredPlugins(NODE, lookup_config)
    final: dict[Key, Instance] = {}
    for seen, present in history:
        if present:
            final[key(seen)] = seen
        else:
            final.pop(key(seen), None)
        incremental.update({key(seen): seen if present else None})

    fresh, _ = desired_plugins(final.values(), NODE, lookup_config)
    assert incremental.plugins == fresh.plugins
    assert len(set(incremental.plugins.values())) == len(incremental.plugins)
