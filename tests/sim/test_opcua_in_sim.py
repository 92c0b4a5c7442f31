"""Akri's OPC UA Configuration on the simulated cluster: asyncua servers found directly and
through a discovery server become shared Instances, and their brokers get OPCUA_DISCOVERY_URL."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from akri import naming
from akri.controller.context import Tuning
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.opcua.handler import OpcUa
from akri.sim.cluster import Cluster
from tests.discovery.conftest import fast_backoff
from tests.handlers.opcua_peers import free_tcp_port, opcua_server, url_of
from tests.sim.users import User
from tests.support import eventually

EXAMPLE = Path(__file__).parents[2] / "crds" / "examples" / "opcua.yaml"
NODES = ["n", "m"]


def configuration(*urls: str) -> dict[str, Any]:
    """crds/examples/opcua.yaml with these discovery URLs, and a broker on every node."""
    example: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    handler = example["spec"]["discoveryHandler"]
    details = yaml.safe_load(handler["discoveryDetails"])
    details["opcuaDiscoveryMethod"]["standard"]["discoveryUrls"] = list(urls)
    handler["discoveryDetails"] = yaml.safe_dump(details)
    limits = {naming.PLACEHOLDER: "1"}
    container = {"name": "broker", "image": "opcua-broker", "resources": {"limits": limits}}
    example["spec"]["brokerSpec"] = {"brokerPodSpec": {"containers": [container]}}
    example["spec"]["capacity"] = len(NODES)
    example["metadata"]["namespace"] = "default"
    return example


@pytest.mark.timeout(300)  # five asyncua servers and two agents start on a shared machine
async def test_servers_direct_and_registered_reach_brokers(socket_dir: Path) -> None:
    lds_port = free_tcp_port()
    async with (
        opcua_server("lds", port=lds_port, discovery_server=True),
        opcua_server("press") as press,
        opcua_server("oven") as oven,
        opcua_server("Historian") as historian,
        Cluster(NODES, workdir=socket_dir, agents=True, controller=Tuning()) as cluster,
        AsyncExitStack() as handlers,
    ):
        await oven.register_to_discovery(url_of(lds_port), period=0)
        await historian.register_to_discovery(url_of(lds_port), period=0)
        for node in NODES:
            handler = OpcUa(check_timeout=1, request_timeout=3)
            directory = cluster.nodes[node].discovery_handlers_dir
            await handlers.enter_async_context(
                HandlerServer(handler, directory, backoff=fast_backoff)
            )
        user = User(cluster)
        await user.apply(configuration(url_of(lds_port), press.endpoint.geturl()))
        wanted = {
            naming.instance_name("akri-opcua", f"{s.endpoint.geturl()}-urn:test:{name}"): s
            for name, s in (("press", press), ("oven", oven))
        }
        for instance, server in wanted.items():
            for node in NODES:
                allocations = await user.wait_running(
                    naming.broker_pod_name(instance, node, shared=True)
                )
                env = allocations["broker"][naming.resource_name(instance)]["envs"]
                key = naming.property_env_name("OPCUA_DISCOVERY_URL", instance)
                assert env[key] == server.endpoint.geturl()

        async def instances() -> list[str]:
            listed = await user.custom.list_namespaced_custom_object(
                naming.GROUP, naming.VERSION, "default", "instances"
            )
            return sorted(i["metadata"]["name"] for i in listed["items"])

        await eventually(
            lambda: _equal(instances(), sorted(wanted)), "only press and oven (not Historian)"
        )


async def _equal(value: Any, expected: object) -> bool:
    return bool(await value == expected)
