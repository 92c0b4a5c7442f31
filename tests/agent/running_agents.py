"""Helpers for tests that run whole agents against the API emulator (one process, many nodes).

Each agent gets its own node name, its own short socket directories and an embedded debugEcho
whose devices the test takes offline per node; metrics are off, as in the simulator.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.agent.agent import Agent
from akri.agent.settings import AgentSettings
from akri.api import (
    Configuration,
    ConfigurationSpec,
    DiscoveryHandlerInfo,
    DiscoveryProperty,
    Instance,
    ObjectMeta,
)
from akri.discovery.handler import DiscoveryHandler
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.kube.guarded import HTTP_CONFLICT
from tests.support import eventually

NAMESPACE = "default"
DETAILS = "descriptions: [foo0, foo1]"


def configuration(
    name: str = "cfg",
    *,
    handler: str = "debugEcho",
    details: str = DETAILS,
    capacity: int = 2,
    broker_properties: Mapping[str, str] | None = None,
    properties: list[DiscoveryProperty] | None = None,
) -> Configuration:
    return Configuration(
        metadata=ObjectMeta(name=name, namespace=NAMESPACE),
        spec=ConfigurationSpec(
            discovery_handler=DiscoveryHandlerInfo(
                name=handler, discovery_details=details, discovery_properties=properties or []
            ),
            capacity=capacity,
            broker_properties=dict(broker_properties or {}),
        ),
    )


@dataclass
class Node:
    """One running agent and the debugEcho it discovers with."""

    name: str
    agent: Agent
    echo: DebugEcho
    task: asyncio.Task[None]


class Api:
    """The emulator through the client, as a user or another component sees it."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    async def apply(self, config: Configuration) -> dict[str, Any]:
        """Create `config`, or replace its spec when it exists."""
        try:
            created: dict[str, Any] = await self.custom.create_namespaced_custom_object(
                naming.GROUP, naming.VERSION, NAMESPACE, "configurations", config.to_wire()
            )
        except client.exceptions.ApiException as error:
            if error.status != HTTP_CONFLICT:
                raise
            spec = config.to_wire()["spec"]
            return await self.edit(
                config.metadata.name or "", lambda found: found.update(spec=spec)
            )
        return created

    async def edit(self, name: str, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Read, change and replace a Configuration, again after a conflict (as `kubectl edit`
        would: the agents write its status meanwhile)."""
        while True:
            current = await self.read_configuration(name)
            assert current is not None, f"Configuration {name} does not exist"
            change(current)
            try:
                replaced: dict[str, Any] = await self.custom.replace_namespaced_custom_object(
                    naming.GROUP, naming.VERSION, NAMESPACE, "configurations", name, current
                )
            except client.exceptions.ApiException as error:
                if error.status != HTTP_CONFLICT:
                    raise
                continue
            return replaced

    async def delete_configuration(self, name: str) -> None:
        await self.custom.delete_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "configurations", name
        )

    async def read_configuration(self, name: str) -> dict[str, Any] | None:
        return await self._read("configurations", name)

    async def instances(self) -> dict[str, Instance]:
        listed = await self.custom.list_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances"
        )
        return {i["metadata"]["name"]: Instance.from_wire(i) for i in listed["items"]}

    async def instance(self, name: str) -> Instance | None:
        found = await self._read("instances", name)
        return None if found is None else Instance.from_wire(found)

    async def condition(self, config: str, type: str) -> dict[str, Any] | None:
        found = await self.read_configuration(config)
        conditions = ((found or {}).get("status") or {}).get("conditions", [])
        return next((c for c in conditions if c["type"] == type), None)

    async def events(self, reason: str) -> list[Any]:
        listed = await self.core.list_namespaced_event(NAMESPACE)
        return [e for e in listed.items if e.reason == reason]

    async def _read(self, plural: str, name: str) -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await self.custom.get_namespaced_custom_object(
                naming.GROUP, naming.VERSION, NAMESPACE, plural, name
            )
        except client.exceptions.ApiException as error:
            if error.status == 404:
                return None
            raise
        return found

    async def nodes_of(self, name: str, nodes: list[str]) -> Instance | None:
        """The Instance once its nodes are exactly `nodes` (sorted), else None."""
        found = await self.instance(name)
        return found if found is not None and sorted(found.spec.nodes) == nodes else None


def settings(root: Path, node: str, **options: Any) -> AgentSettings:
    directory = root / node
    defaults: dict[str, Any] = {
        "device_plugins_dir": directory / "dp",
        "pod_resources_socket": directory / "pr" / "kubelet.sock",
        "discovery_handlers_directory": directory,
        "metrics_port": 0,
    }
    return AgentSettings(agent_node_name=node, **(defaults | options))


@contextlib.asynccontextmanager
async def running_agent(
    api_client: client.ApiClient,
    root: Path,
    node: str,
    *,
    shared: bool = True,
    handlers: list[DiscoveryHandler] | None = None,
    **options: Any,
) -> AsyncIterator[Node]:
    """An agent for `node` with an embedded debugEcho, running for the block."""
    echo = DebugEcho(shared=shared, availability_file=None)
    agent = Agent(
        settings(root, node, **options),
        api_client=api_client,
        handlers=[echo] if handlers is None else handlers,
    )
    task = asyncio.create_task(agent.run(), name=f"agent {node}")
    try:
        await eventually(lambda: agent.ready or task.done(), f"agent {node} to be ready")
        yield Node(node, agent, echo, task)
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
