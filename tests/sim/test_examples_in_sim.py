"""The example Configurations in crds/examples/ on the simulated cluster, as the README says:
an external handler (`akri-discovery-handler`'s server) registers with a node's agent, the
example is applied unchanged, and the devices become Instances."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from kubernetes_asyncio import client
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from akri import naming
from akri.discovery_handlers.mdns.handler import Mdns
from akri.discovery_handlers.onvif.handler import Onvif
from akri.discovery_handlers.server import HandlerServer
from akri.sim.cluster import Cluster
from akri.sim.manifests import apply_documents, load_documents
from tests.handlers.fake_onvif import FakeCamera, free_udp_port
from tests.support import eventually

EXAMPLES = Path(__file__).parents[2] / "crds" / "examples"
NODE = "node-0"


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with Cluster([NODE], workdir=socket_dir, agents=True) as running:
        yield running


async def instances(cluster: Cluster, configuration: str) -> dict[str, dict[str, str]]:
    """Instance name to brokerProperties, for the Instances of `configuration` on NODE."""
    listed = await client.CustomObjectsApi(cluster.api_client()).list_namespaced_custom_object(
        naming.GROUP, naming.VERSION, "default", "instances"
    )
    return {
        i["metadata"]["name"]: i["spec"]["brokerProperties"]
        for i in listed["items"]
        if i["spec"]["configurationName"] == configuration and NODE in i["spec"]["nodes"]
    }


async def test_mdns_example_finds_the_printer_only(cluster: Cluster) -> None:
    node = cluster.nodes[NODE]
    announcer = AsyncZeroconf(interfaces=["127.0.0.1"])
    broadcasts = []
    try:
        async with HandlerServer(Mdns(interfaces=["127.0.0.1"]), node.discovery_handlers_dir):
            await apply_documents(cluster.api_client(), load_documents([EXAMPLES / "mdns.yaml"]))
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
                lambda: instances(cluster, "akri-mdns-printers"), "the printer's Instance"
            )
            (properties,) = found.values()
            assert properties["MDNS_INSTANCE"] == "printer-1"
            assert properties["MDNS_PORT"] == "631"
    finally:
        for broadcast in broadcasts:
            await broadcast
        await announcer.async_close()


async def test_onvif_example_finds_the_lobby_camera_only(cluster: Cluster) -> None:
    node = cluster.nodes[NODE]
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
        await apply_documents(cluster.api_client(), [secret, example])
        found = await eventually(
            lambda: instances(cluster, "akri-onvif"), "the lobby camera's Instance", deadline_s=60
        )
        (properties,) = found.values()
        assert properties["ONVIF_DEVICE_SERVICE_URL"] == lobby.xaddr
        assert properties["RESOLUTION_WIDTH"] == "800"  # the Configuration's brokerProperties
