"""Optimistic concurrency: racing read-modify-writes guarded by resourceVersion."""

from __future__ import annotations

import asyncio

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import GROUP, PLURAL, VERSION, Cluster, new_client, widget

ROUNDS = 40


async def test_exactly_one_racer_wins_each_round(
    cluster: Cluster, custom: client.CustomObjectsApi, namespace: str, widgets: None
) -> None:
    """Two clients read the same version and both write: one 200, one 409, every round."""
    await custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget("contended", nodes=[])
    )
    async with await new_client(cluster) as first, await new_client(cluster) as second:
        racers = {
            "first": client.CustomObjectsApi(first),
            "second": client.CustomObjectsApi(second),
        }

        async def write(name: str, api: client.CustomObjectsApi, seen: dict[str, object]) -> str:
            seen["spec"]["nodes"].append(name)  # type: ignore[index]
            try:
                await api.replace_namespaced_custom_object(
                    GROUP, VERSION, namespace, PLURAL, "contended", seen
                )
            except ApiException as error:
                return "lost" if error.status == 409 else f"failed: {error.status}"
            return "won"

        winners = []
        for _ in range(ROUNDS):
            reads = await asyncio.gather(
                *(
                    api.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "contended")
                    for api in racers.values()
                )
            )
            assert (
                reads[0]["metadata"]["resourceVersion"] == reads[1]["metadata"]["resourceVersion"]
            )
            outcomes = await asyncio.gather(
                *(
                    write(name, api, seen)
                    for (name, api), seen in zip(racers.items(), reads, strict=True)
                )
            )
            assert sorted(outcomes) == ["lost", "won"]
            winners.append(list(racers)[outcomes.index("won")])

    final = await custom.get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "contended"
    )
    assert final["spec"]["nodes"] == winners  # every win landed, no lost update


async def test_guarded_patch_race_on_a_counter(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    """Retry loops of several clients over merge patches with a precondition count exactly."""
    await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="counter"), data={"n": "0"})
    )
    increments_each, clients = 10, 3

    async def increment(api: client.CoreV1Api) -> None:
        for _ in range(increments_each):
            while True:
                current = await api.read_namespaced_config_map("counter", namespace)
                patch = {
                    "metadata": {"resourceVersion": current.metadata.resource_version},
                    "data": {"n": str(int(current.data["n"]) + 1)},
                }
                try:
                    await api.patch_namespaced_config_map("counter", namespace, patch)
                    break
                except ApiException as error:
                    if error.status != 409:
                        raise

    sessions = [await new_client(cluster) for _ in range(clients)]
    try:
        await asyncio.gather(*(increment(client.CoreV1Api(s)) for s in sessions))
    finally:
        for session in sessions:
            await session.close()
    final = await core.read_namespaced_config_map("counter", namespace)
    assert final.data["n"] == str(increments_each * clients)
