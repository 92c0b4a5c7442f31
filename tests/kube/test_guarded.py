"""The guarded read-modify-write: concurrent writers never lose an update."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.kube.guarded import CustomResource, GuardedWriter, Mutation, Object, UpdateConflict
from akri.sim.apiserver import ApiServer

INSTANCES = CustomResource(naming.GROUP, naming.VERSION, "instances")


def instance(name: str, capacity: int = 100) -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Instance",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"configurationName": "cfg", "capacity": capacity, "nodes": [], "deviceUsage": {}},
    }


async def create(api: client.ApiClient, name: str) -> Object:
    custom = client.CustomObjectsApi(api)
    created: Object = await custom.create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances", instance(name)
    )
    return created


def claim(node: str, index: int) -> Mutation:
    """A mutation that takes slot `index` for `node` unless someone holds it."""

    def mutate(obj: Object) -> Object | None:
        usage = obj["spec"]["deviceUsage"]
        slot = naming.slot_id(obj["metadata"]["name"], index)
        if usage.get(slot):
            return None
        usage[slot] = node
        return obj

    return mutate


async def test_racing_writers_each_win_exactly_their_slots(api: client.ApiClient) -> None:
    await create(api, "cfg-000001")
    conflicts = 0

    def count() -> None:
        nonlocal conflicts
        conflicts += 1

    writers = [GuardedWriter(api, INSTANCES, on_conflict=count) for _ in range(4)]
    stale = await writers[0].read("default", "cfg-000001")
    # Every writer starts from the same stale copy: all but one must conflict and re-read.
    await asyncio.gather(
        *(
            writer.update("default", "cfg-000001", claim(f"node-{w}", i), cached=stale)
            for w, writer in enumerate(writers)
            for i in range(w * 10, w * 10 + 10)
        )
    )
    final = await writers[0].read("default", "cfg-000001")
    assert final is not None
    usage = final["spec"]["deviceUsage"]
    assert len(usage) == 40
    for w in range(4):
        assert all(usage[f"cfg-000001-{i}"] == f"node-{w}" for i in range(w * 10, w * 10 + 10))
    assert conflicts > 0


async def test_two_writers_claiming_one_slot_exactly_one_wins(api: client.ApiClient) -> None:
    for round_ in range(20):
        name = f"cfg-{round_:06d}"
        stale = await create(api, name)
        results = await asyncio.gather(
            GuardedWriter(api, INSTANCES).update("default", name, claim("a", 0), cached=stale),
            GuardedWriter(api, INSTANCES).update("default", name, claim("b", 0), cached=stale),
        )
        holders = {r["spec"]["deviceUsage"][f"{name}-0"] for r in results if r is not None}
        assert len(holders) == 1, f"round {round_}: {holders}"


async def test_no_change_means_no_write(api: client.ApiClient) -> None:
    created = await create(api, "cfg-000002")
    writer = GuardedWriter(api, INSTANCES)
    result = await writer.update("default", "cfg-000002", lambda obj: None)
    assert result is not None
    assert result["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_missing_object_gives_none(api: client.ApiClient) -> None:
    assert await GuardedWriter(api, INSTANCES).update("default", "nope", claim("a", 0)) is None


async def test_forced_conflicts_are_retried_then_reported(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    await create(api, "cfg-000003")
    apiserver.faults.add(verb="update", resource="instances", status=409, count=3)
    writer = GuardedWriter(api, INSTANCES)
    stored = await writer.update("default", "cfg-000003", claim("a", 0))
    assert stored is not None
    assert stored["spec"]["deviceUsage"]["cfg-000003-0"] == "a"

    apiserver.faults.add(verb="update", resource="instances", status=409)
    with pytest.raises(UpdateConflict, match="still conflicting"):
        await GuardedWriter(api, INSTANCES, attempts=3).update(
            "default", "cfg-000003", claim("b", 1)
        )


@pytest.mark.parametrize(("known", "reads_expected"), [("newer", 0), ("stale", 1)])
async def test_after_a_conflict_a_version_known_newer_is_decided_on_without_a_read(
    apiserver: ApiServer, api: client.ApiClient, known: str, reads_expected: int
) -> None:
    """`refresh` offers the newer version: no read; it offers the one that met the 409: read."""
    name = f"cfg-refresh-{known}"
    stale = await create(api, name)
    newer = await GuardedWriter(api, INSTANCES).update("default", name, claim("a", 0))
    assert newer is not None
    offered = {"newer": newer, "stale": stale}[known]
    reads = apiserver.faults.add(verb="get", resource="instances")
    stored = await GuardedWriter(api, INSTANCES).update(
        "default", name, claim("b", 1), cached=stale, refresh=lambda: offered
    )
    assert stored is not None
    assert stored["spec"]["deviceUsage"] == {f"{name}-0": "a", f"{name}-1": "b"}
    assert reads.hits == reads_expected
