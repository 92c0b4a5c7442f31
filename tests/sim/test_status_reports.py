"""What `kubectl describe` shows about a Configuration's nodes on the simulated cluster.

Each node's agent reports its own row of `status.nodes`; the conditions are computed from all
rows, and the controller withdraws the rows of nodes that are gone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from akri import naming
from akri.controller.context import Tuning
from akri.sim.cluster import Cluster
from tests.agent.running_agents import running_agent
from tests.sim.users import User
from tests.support import eventually

CFG = "cfg"


def configuration(handler: str = "debugEcho") -> dict[str, Any]:
    return {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": CFG, "namespace": "default"},
        "spec": {
            "discoveryHandler": {"name": handler, "discoveryDetails": "descriptions: [foo0]"},
            "capacity": 1,
        },
    }


async def status(user: User) -> dict[str, Any]:
    found = await user.custom.get_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "configurations", CFG
    )
    result: dict[str, Any] = found.get("status") or {}
    return result


def conditions(found: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c.get("message", ""))
        for c in found.get("conditions") or []
    }


def rows(found: dict[str, Any]) -> dict[str, list[str]]:
    return {r["node"]: [p["type"] for p in r.get("problems", [])] for r in found.get("nodes") or []}


async def warnings(user: User, reason: str) -> list[str]:
    events = await user.core.list_namespaced_event("default")
    return [e.message for e in events.items if e.reason == reason]


async def test_a_stray_agent_does_not_keep_ready_false(socket_dir: Path) -> None:
    """An agent whose node is no node of the cluster (and has no handler) reports
    HandlerUnavailable; its row is withdrawn and Ready is computed from the real nodes."""
    async with Cluster(["n"], workdir=socket_dir, agents=True, controller=Tuning()) as cluster:
        user = User(cluster)
        await user.apply(configuration())

        async def ready() -> dict[str, Any] | None:
            found = await status(user)
            healthy = (
                rows(found) == {"n": []} and conditions(found).get("Ready", ("",))[0] == "True"
            )
            return found if healthy else None

        await eventually(ready, "Ready on node n")
        async with running_agent(cluster.api_client(), socket_dir, "node-9", handlers=[]):
            told = await eventually(
                lambda: warnings(user, "HandlerUnavailable"), "the stray agent's report"
            )
            assert told[0].startswith("node node-9: no discovery handler named 'debugEcho'")
            found = await eventually(ready, "the stray node's row to be withdrawn")
    assert conditions(found)["Ready"] == ("True", "Discovering", "discovering on 1 node(s): n")
    assert conditions(found)["HandlerUnavailable"][:2] == ("False", "Resolved")


async def test_a_deleted_node_stops_counting(socket_dir: Path) -> None:
    """Both nodes miss the handler; once m is deleted, only n is named. (A node not Ready past
    the grace is lost the same way; a short grace would also catch nodes just registered.)"""
    async with Cluster(["m", "n"], workdir=socket_dir, agents=True, controller=Tuning()) as cluster:
        user = User(cluster)
        await user.apply(configuration("udev"))

        async def named(nodes: dict[str, list[str]]) -> dict[str, Any] | None:
            found = await status(user)
            return found if rows(found) == nodes else None

        both = await eventually(
            lambda: named({"m": ["HandlerUnavailable"], "n": ["HandlerUnavailable"]}),
            "both nodes' reports",
        )
        assert conditions(both)["Ready"][:2] == ("False", "HandlerUnavailable")
        message = conditions(both)["HandlerUnavailable"][2]
        assert message.startswith("node m: no discovery handler named 'udev'")
        assert "; node n: no discovery handler named 'udev'" in message
        await user.core.delete_node("m")
        one = await eventually(lambda: named({"n": ["HandlerUnavailable"]}), "m's row withdrawn")
    unavailable = conditions(one)["HandlerUnavailable"]
    assert unavailable[0] == "True"
    assert unavailable[2].startswith("node n: ")
    assert "node m" not in unavailable[2]
    assert "node m" not in conditions(one)["Ready"][2]
