"""An Instance write the API refuses becomes WriteRefused on the Configuration (with Ready
False and an Event), withdrawn once the API takes the write: the agent against the emulator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from akri.naming import instance_name
from akri.sim.apiserver import ApiServer
from tests.agent.running_agents import Api, configuration, running_agent
from tests.support import eventually

NODE = "node-a"
FOO0 = instance_name("cfg", "foo0")
FORBIDDEN = 'instances.akri.sh is forbidden: User "agent" cannot create resource "instances"'


async def conditions(k: Api) -> dict[str, dict[str, Any]]:
    found = await k.read_configuration("cfg") or {}
    return {c["type"]: c for c in (found.get("status") or {}).get("conditions") or []}


async def test_a_refused_create_is_reported_until_the_api_takes_it(
    apiserver: ApiServer, api: client.ApiClient, socket_dir: Path
) -> None:
    k = Api(api)
    rule = apiserver.faults.add(verb="create", resource="instances", status=403, message=FORBIDDEN)
    async with running_agent(api, socket_dir, NODE):
        await k.apply(configuration(details="descriptions: [foo0]"))

        async def refused() -> dict[str, dict[str, Any]] | None:
            found = await conditions(k)
            return found if found.get("WriteRefused", {}).get("status") == "True" else None

        reported = await eventually(refused, "WriteRefused")
        events = await eventually(lambda: k.events("WriteRefused"), "an Event")
        apiserver.faults.remove(rule.id)
        await eventually(lambda: k.nodes_of(FOO0, [NODE]), "the Instance, created at last")

        async def ready() -> dict[str, dict[str, Any]] | None:
            found = await conditions(k)
            return found if found.get("Ready", {}).get("status") == "True" else None

        cleared = await eventually(ready, "Ready True again")
    message = f"node {NODE}: the API refuses this node's Instance writes: (403) {FORBIDDEN}"
    assert reported["WriteRefused"]["message"] == message
    assert (reported["Ready"]["status"], reported["Ready"]["reason"]) == ("False", "WriteRefused")
    assert [e.message for e in events] == [message]
    assert (cleared["WriteRefused"]["status"], cleared["WriteRefused"]["reason"]) == (
        "False",
        "Resolved",
    )
