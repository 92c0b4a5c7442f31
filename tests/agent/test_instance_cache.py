"""The Instance cache wakes each subscriber only for the Instances it follows, and loses none."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from akri.agent.instances import (
    EVERYTHING,
    InstanceCache,
    configuration_topic,
    instance_topic,
)
from akri.api import Instance
from akri.kube.reflector import Key
from akri.sim.apiserver import ApiServer
from tests.agent.conftest import NAMESPACE, Cluster, configuration, shared_instance
from tests.support import eventually, running

CAM = configuration("cam", capacity=1)
USB = configuration("usb", capacity=1)


@pytest.fixture
async def cache(cluster: Cluster) -> AsyncIterator[InstanceCache]:
    cache = InstanceCache(cluster.api)
    async with running(cache.run()):
        await cache.synced.wait()
        yield cache


def key(name: str) -> Key:
    return NAMESPACE, name


async def test_each_subscriber_hears_only_its_topic(cluster: Cluster, cache: InstanceCache) -> None:
    cam0 = await cluster.create_instance(CAM, "foo0", ["node-a"])
    await eventually(lambda: cache.get(NAMESPACE, cam0) is not None, "the cache to see it")
    with (
        cache.subscribe(instance_topic(NAMESPACE, cam0)) as one,
        cache.subscribe(configuration_topic(NAMESPACE, "cam")) as cams,
        cache.subscribe(configuration_topic(NAMESPACE, "usb")) as usbs,
        cache.subscribe(EVERYTHING) as everything,
    ):
        cam1 = await cluster.create_instance(CAM, "foo1", ["node-a"])
        usb0 = await cluster.create_instance(USB, "dev0", ["node-a"])
        await cluster.change_instance(cam0, nodes=["node-a", "node-b"])
        await cluster.delete_instance(cam1)

        def settled() -> bool:
            moved = cache.get(NAMESPACE, cam0)
            return (
                moved is not None
                and "node-b" in moved.spec.nodes
                and cache.get(NAMESPACE, cam1) is None
                and cache.get(NAMESPACE, usb0) is not None
            )

        await eventually(settled, "the cache to see every change")

        # Each subscriber has collected the keys of its own topic, and only those.
        assert await everything.next() == {key(cam0), key(cam1), key(usb0)}
        assert await one.next() == {key(cam0)}
        assert await cams.next() == {key(cam0), key(cam1)}
        assert await usbs.next() == {key(usb0)}
    assert cache.get(NAMESPACE, cam1) is None
    assert {i.metadata.name for i in cache.of_configuration(NAMESPACE, "cam")} == {cam0}


async def test_a_burst_of_changes_is_one_wake_up_and_none_is_lost(
    cluster: Cluster, cache: InstanceCache
) -> None:
    with cache.subscribe(configuration_topic(NAMESPACE, "cam")) as cams:
        names = [await cluster.create_instance(CAM, f"foo{i}", ["node-a"]) for i in range(20)]
        await eventually(
            lambda: len(cache.of_configuration(NAMESPACE, "cam")) == 20, "all 20 in the cache"
        )
        assert await cams.next() == {key(name) for name in names}


async def test_an_instance_moving_between_configurations_tells_both(
    cluster: Cluster, cache: InstanceCache
) -> None:
    name = await cluster.create_instance(CAM, "foo0", ["node-a"])
    await eventually(lambda: cache.get(NAMESPACE, name) is not None, "the cache to see it")
    with (
        cache.subscribe(configuration_topic(NAMESPACE, "cam")) as cams,
        cache.subscribe(configuration_topic(NAMESPACE, "usb")) as usbs,
    ):
        await cluster.change_instance(name, configuration_name="usb")

        assert await cams.next() == {key(name)}
        assert await usbs.next() == {key(name)}
    assert cache.of_configuration(NAMESPACE, "cam") == []
    assert [i.metadata.name for i in cache.of_configuration(NAMESPACE, "usb")] == [name]


async def test_an_instance_it_created_and_another_writer_deleted_unseen_is_forgotten_on_relist(
    apiserver: ApiServer, cluster: Cluster, cache: InstanceCache
) -> None:
    """Found by the soak: a node back from a node loss creates its Instances again; the
    controller, still seeing the node lost, deletes them while the agent's watch is broken;
    the watch comes back with 410 Gone and the relist finds them gone. The relist compared
    against what the watch had shown, which never included these Instances (the cache held
    them from the create's answer), so no deletion was reported: the agent kept believing
    it was listed and never created them again."""
    reconnect = apiserver.faults.add(
        verb="watch", resource="instances", status=410, hold=True, count=1
    )
    apiserver.faults.drop_watches(resource="instances")
    await eventually(lambda: reconnect.hits == 1, "the watch to reconnect, held")

    created = await cache.create(shared_instance(CAM, "foo0", ["node-a"]))
    name = created.metadata.name or ""
    assert cache.get(NAMESPACE, name) is not None
    await cluster.delete_instance(name)  # the controller, say
    marker = await cluster.create_instance(USB, "dev0", ["node-b"])
    with cache.subscribe(instance_topic(NAMESPACE, name)) as changes:
        apiserver.faults.remove(reconnect.id)  # the held watch answers 410 Gone: relist

        await eventually(lambda: cache.get(NAMESPACE, marker) is not None, "the relist")
        assert cache.get(NAMESPACE, name) is None
        assert await changes.next() == {key(name)}
    assert cache.of_configuration(NAMESPACE, "cam") == []


async def test_a_follower_of_what_it_reads_hears_only_changes_of_that(
    cluster: Cluster, cache: InstanceCache
) -> None:
    first = await cluster.create_instance(CAM, "foo0", ["node-a"])
    second = await cluster.create_instance(CAM, "foo1", ["node-a"])
    await eventually(lambda: len(cache.of_configuration(NAMESPACE, "cam")) == 2, "both cached")
    nodes = cache.reads_changed(lambda i: tuple(i.spec.nodes), (NAMESPACE, "cam"))

    def seen(name: str, check: Callable[[Instance], bool]) -> bool:
        found = cache.get(NAMESPACE, name)
        return found is not None and check(found)

    with cache.subscribe(configuration_topic(NAMESPACE, "cam"), nodes) as cams:
        await cluster.change_instance(first, broker_properties={"COLOR": "red"})
        await cluster.change_instance(second, nodes=["node-a", "node-b"])
        await eventually(
            lambda: (
                seen(first, lambda i: bool(i.spec.broker_properties))
                and seen(second, lambda i: len(i.spec.nodes) == 2)
            ),
            "the cache to see both changes",
        )
        assert await cams.next() == {key(second)}, "a change of what it does not read is none"

        third = await cluster.create_instance(CAM, "foo2", ["node-a"])
        await cluster.change_instance(first, configuration_name="usb")
        await eventually(
            lambda: (
                seen(third, lambda _: True)
                and seen(first, lambda i: i.spec.configuration_name == "usb")
            ),
            "the cache to see the new one and the move",
        )
        assert await cams.next() == {key(first), key(third)}, "joining and leaving count"

        await cluster.delete_instance(third)
        await eventually(lambda: cache.get(NAMESPACE, third) is None, "the deletion seen")
        assert await cams.next() == {key(third)}
