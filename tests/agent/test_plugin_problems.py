"""A device plugin that cannot serve is reported on its Instance and Configuration, and the
report is withdrawn once it serves: the agent against the API and kubelet emulators."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.api import Instance
from akri.sim.kubelet import Kubelet
from tests.agent.running_agents import Api, configuration, running_agent
from tests.support import eventually

NODE = "node-a"
MERGE_PATCH: dict[str, Any] = {"_content_type": "application/merge-patch+json"}
FOO0 = naming.instance_name("cfg", "foo0")


@pytest.fixture
async def kubelet(socket_dir: Path) -> AsyncIterator[Kubelet]:
    """A kubelet serving its own device-plugins directory; it dials plugins back there only."""
    async with Kubelet(
        NODE, socket_dir / "kubelet" / "dp", socket_dir / "kubelet" / "pr", dial_timeout=0.5
    ) as running:
        yield running


def instance_condition(instance: Instance | None, type: str) -> tuple[str, str] | None:
    found = None if instance is None or instance.status is None else instance.status.condition(type)
    return None if found is None else (found.status, found.message)


async def test_a_plugin_the_kubelet_cannot_reach_is_reported_until_it_serves(
    api: client.ApiClient, socket_dir: Path, kubelet: Kubelet
) -> None:
    """The agent's device-plugins directory is not the kubelet's (a hostPath mistake): the
    agent finds kubelet.sock (a link), but the kubelet cannot dial the plugins back."""
    k = Api(api)
    agent_dir = socket_dir / NODE / "dp"
    agent_dir.mkdir(parents=True)
    (agent_dir / "kubelet.sock").symlink_to(kubelet.socket)
    async with running_agent(api, socket_dir, NODE) as node:
        await k.apply(configuration(details="descriptions: [foo0]", capacity=1))

        async def unavailable() -> tuple[str, str] | None:
            found = instance_condition(await k.instance(FOO0), "PluginUnavailable")
            return found if found is not None and found[0] == "True" else None

        on_instance = await eventually(unavailable, "PluginUnavailable on the Instance")

        async def both_on_configuration() -> dict[str, Any] | None:
            found = await _ready(k, "False")
            message = "" if found is None else found["message"]
            both = f"akri.sh/{FOO0}:" in message and "akri.sh/cfg:" in message
            return found if both else None

        ready = await eventually(both_on_configuration, "both plugins named on the Configuration")

        async def on_both() -> list[Any] | None:
            found = await k.events("PluginUnavailable")
            kinds = {e.involved_object.kind for e in found}
            return found if kinds >= {"Instance", "Configuration"} else None

        # The Events are recorded after the conditions are written, each in its own time.
        events = await eventually(on_both, "an Event on the Instance and one on the Configuration")

        # Fixed: the kubelet's directory gets the plugins' sockets (the next attempt registers).
        plugins = node.agent.plugins
        assert plugins is not None
        for plugin in plugins.plugins.values():
            assert plugin.server is not None
            (kubelet.device_plugins_dir / plugin.server.socket.name).symlink_to(
                plugin.server.socket
            )
        cleared = await eventually(lambda: _ready(k, "True"), "Ready True again")
        instance = await k.instance(FOO0)
        registered = kubelet.registered_resources()
    assert on_instance[1].startswith(f"node {NODE}: the kubelet refused to register akri.sh/")
    assert ready["reason"] == "PluginUnavailable"
    assert ready["message"].startswith(f"node {NODE}: the kubelet refused to register akri.sh/")
    assert {e.involved_object.kind for e in events} >= {"Instance", "Configuration"}
    assert cleared["message"] == f"discovering on 1 node(s): {NODE}"
    assert registered == {f"akri.sh/{FOO0}", "akri.sh/cfg"}
    assert instance is not None
    assert instance.status is not None
    assert instance.status.nodes == []
    assert instance_condition(instance, "PluginUnavailable") == (
        "False",
        "no node reports it any more",
    )


async def _ready(k: Api, status: str) -> dict[str, Any] | None:
    found = await k.condition("cfg", "Ready")
    return found if found is not None and found["status"] == status else None


async def test_a_corrupt_slot_value_is_an_event_on_the_instance(
    api: client.ApiClient, socket_dir: Path
) -> None:
    """Recorded once, by the first node in `nodes`, not by every node that sees it."""
    k = Api(api)
    async with running_agent(api, socket_dir, "node-a"), running_agent(api, socket_dir, "node-b"):
        await k.apply(configuration(details="descriptions: [foo0]"))
        await eventually(lambda: k.nodes_of(FOO0, ["node-a", "node-b"]), "foo0 on both nodes")
        slot = naming.slot_id(FOO0, 0)
        await client.CustomObjectsApi(api).patch_namespaced_custom_object(
            naming.GROUP,
            naming.VERSION,
            "default",
            "instances",
            FOO0,
            {"spec": {"deviceUsage": {slot: "C:broken"}}},
            **MERGE_PATCH,
        )
        events = await eventually(lambda: k.events("UnusableSlot"), "an UnusableSlot Event")
    (event,) = events
    assert event.involved_object.name == FOO0
    assert event.type == "Warning"
    assert event.message == (
        f"node node-a: Instance {FOO0}: slot {slot} is unavailable, corrupt ('C:broken')"
    )
