"""A compromised node uses its agent's token (the chart's agent account, bound to node-a) to
change what other nodes hold or see (docs/security.md, "A compromised node"). The API server
refuses each write, and the Instance stays as it was."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.security.support import GROUP, VERSION, Secured, refusal

SHARED = "camera-a1b2c3"  # seen by node-a and node-b
FOREIGN = "camera-d4e5f6"  # seen by node-b only
Mutation = Callable[[dict[str, Any]], None]


def instance(name: str, nodes: list[str], usage: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Instance",
        "metadata": {"name": name},
        "spec": {
            "configurationName": "camera",
            "capacity": len(usage),
            "shared": True,
            "nodes": nodes,
            "deviceUsage": usage,
            "brokerProperties": {"RTSP_URL": "rtsp://10.0.0.7/stream"},
        },
    }


@pytest.fixture
async def node_a(secured: Secured) -> AsyncIterator[client.CustomObjectsApi]:
    """Instances as the agents left them, and node-a's agent's client."""
    core = client.CoreV1Api(secured.api)
    if secured.cluster.server is not None:  # the emulator has no nodes; the rig has these
        for node in ("node-a", "node-b"):
            await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name=node)))
    usage = {f"{SHARED}-0": "node-b", f"{SHARED}-1": "", f"{SHARED}-2": "C:camera-0:node-b"}
    for body in (
        instance(SHARED, ["node-a", "node-b"], usage),
        instance(FOREIGN, ["node-b"], {f"{FOREIGN}-0": ""}),
    ):
        await secured.custom.create_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, "instances", body
        )
    async with await secured.client_for(await secured.agent_token("node-a")) as api:
        yield client.CustomObjectsApi(api)


async def stored(secured: Secured, name: str) -> dict[str, Any]:
    found: dict[str, Any] = await secured.custom.get_namespaced_custom_object(
        GROUP, VERSION, secured.namespace, "instances", name
    )
    return found


async def write_as_node_a(
    secured: Secured, agent: client.CustomObjectsApi, name: str, mutate: Mutation
) -> tuple[int, str]:
    """A read-modify-write of Instance `name` as the agent does it; the refusal, after
    checking the Instance is unchanged when refused."""
    before = await stored(secured, name)
    changed = {**before, "spec": dict(before["spec"])}
    changed["spec"]["deviceUsage"] = dict(before["spec"]["deviceUsage"])
    mutate(changed)
    status, message = await refusal(
        lambda: agent.replace_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, "instances", name, changed
        )
    )
    if status != 200:
        assert await stored(secured, name) == before
    return status, message


def set_slot(slot: str, holder: str) -> Mutation:
    return lambda obj: obj["spec"]["deviceUsage"].__setitem__(slot, holder)


async def test_freeing_another_nodes_slot_is_refused(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    status, message = await write_as_node_a(secured, node_a, SHARED, set_slot(f"{SHARED}-0", ""))
    assert status == 403
    assert "the agent of node node-a may take and free only its own slots" in message


async def test_taking_another_nodes_slot_is_refused(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    status, message = await write_as_node_a(
        secured, node_a, SHARED, set_slot(f"{SHARED}-2", "C:camera-0:node-a")
    )
    assert status == 403
    assert "the agent of node node-a may take and free only its own slots" in message


async def test_removing_another_node_is_refused(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    def leave_only_a(obj: dict[str, Any]) -> None:
        obj["spec"]["nodes"] = ["node-a"]

    status, message = await write_as_node_a(secured, node_a, SHARED, leave_only_a)
    assert status == 403
    assert "may add or remove only its own node" in message


async def test_rewriting_properties_of_an_unseen_device_is_refused(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    def poison(obj: dict[str, Any]) -> None:
        obj["spec"]["brokerProperties"] = {"RTSP_URL": "rtsp://attacker.example/stream"}

    status, message = await write_as_node_a(secured, node_a, FOREIGN, poison)
    assert status == 403
    assert "only of an Instance its node sees" in message


async def test_deleting_an_instance_another_node_sees_is_refused(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    status, message = await refusal(
        lambda: node_a.delete_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, "instances", FOREIGN
        )
    )
    assert status == 403
    assert "delete only an Instance no other node sees" in message
    assert (await stored(secured, FOREIGN))["spec"]["nodes"] == ["node-b"]


async def test_an_agent_token_without_a_node_is_refused(secured: Secured) -> None:
    """A token of the agent's account not bound to a node (a stolen or hand-made one)."""
    await secured.custom.create_namespaced_custom_object(
        GROUP, VERSION, secured.namespace, "instances",
        instance(FOREIGN, ["node-b"], {f"{FOREIGN}-0": ""}),
    )  # fmt: skip
    async with await secured.client_for(await secured.account_token("akri", "akri-agent")) as api:
        status, message = await write_as_node_a(
            secured, client.CustomObjectsApi(api), FOREIGN, set_slot(f"{FOREIGN}-0", "node-b")
        )
    assert status == 403
    assert "the agent's token names no node" in message


async def test_the_agent_may_still_take_a_free_slot_and_leave(
    secured: Secured, node_a: client.CustomObjectsApi
) -> None:
    """What an agent does for its own node goes through."""
    status, _ = await write_as_node_a(
        secured, node_a, SHARED, set_slot(f"{SHARED}-1", "C:camera-1:node-a")
    )
    assert status == 200

    def leave(obj: dict[str, Any]) -> None:
        obj["spec"]["nodes"] = ["node-b"]

    status, _ = await write_as_node_a(secured, node_a, SHARED, leave)
    assert status == 200
