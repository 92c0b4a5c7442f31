"""A shared device missing on a node shows at once (DeviceOffline on its Instance, an Event),
not only when the offline grace has run out: the agents against the API emulator."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from kubernetes_asyncio import client

from akri.api import Instance
from tests.agent.running_agents import Api, Node, configuration, running_agent
from tests.support import eventually

A, B = "node-a", "node-b"
FOO0 = "cfg-8120fe"


def offline(instance: Instance | None) -> tuple[str, str] | None:
    found = (
        None
        if instance is None or instance.status is None
        else instance.status.condition("DeviceOffline")
    )
    return None if found is None else (found.status, found.message)


@contextlib.asynccontextmanager
async def foo0_missing_on_a(
    api: client.ApiClient, socket_dir: Path, grace: float
) -> AsyncIterator[Node]:
    """Two agents see foo0, then node-a no longer does."""
    async with (
        running_agent(api, socket_dir, A, offline_grace=grace) as a,
        running_agent(api, socket_dir, B, offline_grace=grace),
    ):
        k = Api(api)
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, [A, B]), "foo0 on both nodes")
        a.echo.set_offline(["foo0"])
        yield a


async def test_a_device_missing_is_reported_at_once_and_withdrawn_when_back(
    api: client.ApiClient, socket_dir: Path
) -> None:
    k = Api(api)
    async with foo0_missing_on_a(api, socket_dir, 60) as a:

        async def reported() -> Instance | None:
            found = await k.instance(FOO0)
            return found if (offline(found) or ("",))[0] == "True" else None

        missing = await eventually(reported, "DeviceOffline on foo0")
        told = await eventually(lambda: k.events("DeviceOffline"), "a DeviceOffline Event")
        a.echo.set_offline()

        async def withdrawn() -> Instance | None:
            found = await k.instance(FOO0)
            back = found is not None and found.status is not None and found.status.nodes == []
            return found if back else None

        back = await eventually(withdrawn, "the report withdrawn")
        online = await eventually(lambda: k.events("DeviceOnline"), "a DeviceOnline Event")
    assert sorted(missing.spec.nodes) == [A, B]  # within the grace: still in nodes
    message = (offline(missing) or ("", ""))[1]
    assert message.startswith(f"node {A}: device offline since ")
    assert "this node leaves the Instance in 60 s (at " in message
    assert [e.message for e in told] == [message]
    assert [e.involved_object.name for e in told] == [FOO0]
    assert offline(back) == ("False", "no node reports it any more")
    assert [e.message for e in online] == [f"node {A}: device back"]


async def test_the_report_goes_when_the_node_leaves(
    api: client.ApiClient, socket_dir: Path
) -> None:
    k = Api(api)
    async with foo0_missing_on_a(api, socket_dir, 0.5):
        told = await eventually(lambda: k.events("DeviceOffline"), "a DeviceOffline Event")
        left = await eventually(lambda: k.nodes_of(FOO0, [B]), "node-a to leave foo0")

        async def withdrawn() -> Instance | None:
            found = await k.instance(FOO0)
            gone = offline(found) == ("False", "no node reports it any more")
            return found if gone else None

        found = await eventually(withdrawn, "the report withdrawn")
    assert "leaves the Instance in 0.5 s" in told[0].message
    assert left.spec.nodes == [B]
    assert found.status is not None
    assert found.status.nodes == []
