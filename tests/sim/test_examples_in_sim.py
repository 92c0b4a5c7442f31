"""The example Configurations in crds/examples/ on the simulated cluster, as the README says:
an external handler (`akri-discovery-handler`'s server) registers with a node's agent, the
example is applied unchanged, and the devices become Instances: with the agents inside the
simulator, and (slow) with `make sim`'s, the chart's pods in their own network namespaces."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from akri import naming
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.mdns.handler import Mdns
from akri.discovery_handlers.onvif.handler import Onvif
from akri.sim.cluster import Cluster, load_client
from akri.sim.manifests import apply_documents, load_documents
from akri.sim.podnet.cluster import TOOLS
from tests.chart.test_make_sim import ROOT, make_sim_command
from tests.handlers.fake_onvif import ON_LOOPBACK, FakeCamera, free_udp_port
from tests.support import eventually

EXAMPLES = Path(__file__).parents[2] / "crds" / "examples"
NODE = "node-0"


@dataclass
class Node:
    """What a test needs of the cluster: its API and NODE's agent's registration directory."""

    api: client.ApiClient
    discovery_handlers_dir: Path


@pytest.fixture(
    params=[
        "in-process",
        pytest.param(
            "make-sim",
            marks=[
                pytest.mark.slow,
                # make sim's start-up: the chart's pods, then its examples hook (as test_make_sim)
                pytest.mark.timeout(400),
                pytest.mark.skipif(
                    os.geteuid() != 0 or any(shutil.which(tool) is None for tool in TOOLS),
                    reason="needs root and " + ", ".join(TOOLS),
                ),
            ],
        ),
    ]
)
async def node(request: pytest.FixtureRequest, socket_dir: Path) -> AsyncIterator[Node]:
    if request.param == "in-process":
        async with Cluster([NODE], workdir=socket_dir, agents=True) as running:
            yield Node(running.api_client(), running.nodes[NODE].discovery_handlers_dir)
        return
    kubeconfig, workdir = socket_dir / "kubeconfig", socket_dir / "w"
    sim = await asyncio.create_subprocess_exec(
        *make_sim_command(), "--kubeconfig", str(kubeconfig), "--workdir", str(workdir),
        cwd=ROOT, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 300)
        async with await load_client(kubeconfig) as api:
            yield Node(api, workdir / "nodes" / NODE / "akri")
    finally:
        sim.send_signal(signal.SIGINT)
        await asyncio.wait_for(sim.communicate(), 60)


async def instances(node: Node, configuration: str) -> dict[str, dict[str, str]]:
    """Instance name to brokerProperties, for the Instances of `configuration` on NODE."""
    listed = await client.CustomObjectsApi(node.api).list_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances"
    )
    return {
        i["metadata"]["name"]: i["spec"]["brokerProperties"]
        for i in listed["items"]
        if i["spec"]["configurationName"] == configuration and NODE in i["spec"]["nodes"]
    }


async def test_mdns_example_finds_the_printer_only(node: Node) -> None:
    announcer = AsyncZeroconf(interfaces=["127.0.0.1"])
    broadcasts = []
    try:
        async with HandlerServer(Mdns(interfaces=["127.0.0.1"]), node.discovery_handlers_dir):
            await apply_documents(node.api, load_documents([EXAMPLES / "mdns.yaml"]))
            for name in ("scanner-1", "printer-1"):
                info = AsyncServiceInfo(
                    "_http._tcp.local.",
                    f"{name}._http._tcp.local.",
                    addresses=[socket.inet_aton("127.0.0.1")],
                    port=631,
                    server=f"{name}.local.",
                )
                broadcasts.append(
                    await announcer.async_register_service(info, cooperating_responders=True)
                )
            found = await eventually(
                lambda: instances(node, "akri-mdns-printers"), "the printer's Instance"
            )
            (properties,) = found.values()
            assert properties["MDNS_INSTANCE"] == "printer-1"
            assert properties["MDNS_PORT"] == "631"
    finally:
        for broadcast in broadcasts:
            await broadcast
        await announcer.async_close()


async def test_onvif_example_finds_the_lobby_camera_only(node: Node) -> None:
    port = free_udp_port()  # a private WS-Discovery port: nothing else on the machine joins in
    credentials = {"device_credential_list": "[]"}
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "onvif-auth", "namespace": "default"},
        "stringData": credentials,
    }
    handler = Onvif(port=port, interface_address="127.0.0.1")
    async with (
        FakeCamera(port=port, uuid="1a2b3c4d-0000-4000-8000-00000000000a") as lobby,
        FakeCamera(
            port=port,
            uuid="1a2b3c4d-0000-4000-8000-00000000000b",
            scopes=("onvif://www.onvif.org/name/Garage",),
        ),
        HandlerServer(handler, node.discovery_handlers_dir),
    ):
        example = yaml.safe_load((EXAMPLES / "onvif.yaml").read_text())
        example["spec"]["discoveryHandler"]["discoveryDetails"] += ON_LOOPBACK
        await apply_documents(node.api, [secret, example])
        found = await eventually(
            lambda: instances(node, "akri-onvif"), "the lobby camera's Instance", deadline_s=60
        )
        (properties,) = found.values()
        assert properties["ONVIF_DEVICE_SERVICE_URL"] == lobby.xaddr
        assert properties["RESOLUTION_WIDTH"] == "800"  # the Configuration's brokerProperties
