"""Which plugins a node should run: the manager's pure decision."""

from __future__ import annotations

from akri import naming
from akri.agent.plugins.desired import Level, PluginSpec, desired_plugins
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


def test_an_instance_level_plugin_per_instance_and_one_per_configuration() -> None:
    instances = [
        instance("cam", "foo0", [NODE, "node-b"]),
        instance("cam", "foo1", [NODE]),
        instance("cam", "foo2", ["node-b"]),  # not seen here
        instance("usb", "dev", ["node-b"]),  # no Instance of usb on this node
    ]
    configs = lookup(configuration("cam", unique=False), configuration("usb"))

    desired = desired_plugins(instances, NODE, lambda ns, name: configs.get((ns, name)))

    assert desired.plugins == {
        "akri.sh/cam-8120fe": PluginSpec("default", Level.INSTANCE, "cam-8120fe"),
        "akri.sh/cam-a19705": PluginSpec("default", Level.INSTANCE, "cam-a19705"),
        "akri.sh/cam": PluginSpec("default", Level.CONFIGURATION, "cam", unique=False),
    }
    assert desired.problems == []


def test_instances_of_an_unknown_configuration_are_not_served() -> None:
    desired = desired_plugins([instance("cam", "foo0", [NODE])], NODE, lambda ns, name: None)
    assert desired.plugins == {}


def test_names_that_cannot_be_resources_are_reported() -> None:
    long = "c" * 60  # the Configuration fits, its Instances do not
    configs = lookup(configuration(long))
    desired = desired_plugins(
        [instance(long, "foo0", [NODE])], NODE, lambda ns, name: configs.get((ns, name))
    )
    assert list(desired.plugins) == [naming.resource_name(long)]
    (problem,) = desired.problems
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

    desired = desired_plugins(instances, NODE, lambda ns, name: configs.get((ns, name)))
    again = desired_plugins(reversed(instances), NODE, lambda ns, name: configs.get((ns, name)))

    assert desired == again  # the order Instances are seen in does not matter
    assert desired.plugins == {
        "akri.sh/cam": PluginSpec("a", Level.CONFIGURATION, "cam"),
        "akri.sh/cam-8120fe": PluginSpec("a", Level.INSTANCE, "cam-8120fe"),
    }
    assert len(desired.problems) == 3
    assert all("is served by" in problem for problem in desired.problems)


def test_a_spec_says_what_it_serves() -> None:
    spec = PluginSpec("default", Level.CONFIGURATION, "cam")
    assert spec.resource == "akri.sh/cam"
    assert str(spec) == "configuration plugin akri.sh/cam (default/cam)"
