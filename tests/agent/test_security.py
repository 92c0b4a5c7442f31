"""Security as tests: owner-only sockets, safe socket directories, bounded registrations, and
secret values that never show anywhere the agent or a handler writes."""

from __future__ import annotations

import asyncio
import logging
import stat
from pathlib import Path

import grpc
import pytest
from kubernetes_asyncio import client
from prometheus_client import generate_latest

from akri import naming
from akri.agent.discovery.registration import MAX_REQUEST_BYTES
from akri.api import DiscoveryProperty, PropertySource
from akri.api.configuration import KeySelector
from akri.discovery.registration import registration_socket
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.discovery_handlers.onvif.handler import Onvif
from akri.proto.discovery.v0.discovery_pb2 import RegisterDiscoveryHandlerRequest
from akri.proto.discovery.v0.discovery_pb2_grpc import RegistrationStub
from akri.sim.kubelet import Kubelet
from tests.agent.running_agents import NAMESPACE, Api, configuration, running_agent
from tests.agent.test_agent_process import EXIT_DEADLINE_S, agent_environment, agent_process
from tests.discovery.conftest import fast_backoff
from tests.handlers.fake_onvif import ON_LOOPBACK, FakeCamera, free_udp_port
from tests.support import eventually

SECRET = "Qz7-very-private-Xy9"
UUID = "3fa1fe68-b915-4053-a3e1-ac15a21f5f91"


def sockets(directory: Path) -> dict[str, int]:
    """Every unix socket below `directory`, with its permission bits."""
    return {
        str(path.relative_to(directory)): stat.S_IMODE(path.lstat().st_mode)
        for path in directory.rglob("*")
        if stat.S_ISSOCK(path.lstat().st_mode)
    }


async def test_every_socket_the_agent_and_a_handler_serve_is_owner_only(
    api: client.ApiClient, socket_dir: Path
) -> None:
    root = socket_dir / "node-s"
    kubelet = Kubelet("node-s", root / "dp", root / "pr")  # plugins serve while one runs
    async with (
        kubelet,
        running_agent(api, socket_dir, "node-s"),
        HandlerServer(DebugEcho(availability_file=None), root, backoff=fast_backoff),
    ):
        k = Api(api)
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of("cfg-8120fe", ["node-s"]), "an Instance")
        found: dict[str, int] = {}

        def served() -> bool:
            found.update(sockets(root))
            plugins = [name for name in found if name.startswith("dp/akri.sh-")]
            return (
                len(plugins) == 3 and "debugEcho.sock" in found
            )  # two instance-level, one configuration-level

        await eventually(served, "the plugin, registration and handler sockets")
    assert registration_socket(root).name in found
    kubelets = {
        str(path.relative_to(root)) for path in (kubelet.socket, kubelet.pod_resources_socket)
    }
    agents = {name: mode for name, mode in found.items() if name not in kubelets}
    assert {name: mode for name, mode in agents.items() if mode != 0o600} == {}


async def test_the_agent_refuses_a_socket_directory_every_user_may_write(
    socket_dir: Path,
) -> None:
    shared = socket_dir / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    env = agent_environment(AGENT_NODE_NAME="node-p", DISCOVERY_HANDLERS_DIRECTORY=str(shared))
    async with agent_process(env) as process:
        async with asyncio.timeout(EXIT_DEADLINE_S):
            _, stderr = await process.communicate()
    assert process.returncode == 2
    assert stderr.decode().strip() == (
        f"akri-agent: invalid settings: DISCOVERY_HANDLERS_DIRECTORY: {shared} is writable by "
        "every user (mode drwxrwxrwx): they could replace the sockets or files kept there; "
        "allow writes by its owner only (chmod go-w)"
    )
    assert not list(shared.iterdir())


async def test_an_oversized_registration_is_refused_unread(
    api: client.ApiClient, socket_dir: Path
) -> None:
    async with running_agent(api, socket_dir, "node-r", handlers=[]) as node:
        target = f"unix://{registration_socket(socket_dir / 'node-r')}"
        async with grpc.aio.insecure_channel(target) as channel:
            huge = RegisterDiscoveryHandlerRequest(name="x" * MAX_REQUEST_BYTES, endpoint="/e")
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await RegistrationStub(channel).RegisterDiscoveryHandler(huge, timeout=5)
        assert refused.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        assert node.agent.registry.names() == set()
        async with HandlerServer(DebugEcho(availability_file=None), socket_dir / "node-r"):
            await eventually(lambda: node.agent.registry.names() == {"debugEcho"}, "a handler")


async def test_secret_values_never_show_in_logs_events_conditions_or_metrics(
    api: client.ApiClient, socket_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An onvif camera whose password comes from a Secret, one camera that refuses it, and a
    Configuration that names a key its Secret lacks: every outcome is reported, no secret."""
    caplog.set_level(logging.DEBUG)
    core = client.CoreV1Api(api)
    await core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(
            metadata=client.V1ObjectMeta(name="onvif-auth"), string_data={"password": SECRET}
        ),
    )
    port = free_udp_port()
    password = DiscoveryProperty(
        name="password_default",
        value_from=PropertySource(secret_key_ref=KeySelector(name="onvif-auth", key="password")),
    )
    missing = DiscoveryProperty(
        name="password_default",
        value_from=PropertySource(secret_key_ref=KeySelector(name="onvif-auth", key="nope")),
    )
    user = DiscoveryProperty(name="username_default", value="admin")
    details = (
        "discoveryTimeoutSeconds: 0.2\ninterfaceAddress: 127.0.0.1\nprobeIntervalSeconds: 1\n"
        + ON_LOOPBACK
    )
    k = Api(api)
    async with (
        FakeCamera(port=port, uuid=UUID, password=SECRET) as camera,
        FakeCamera(port=port, uuid="0b5c5c3a-5e7e-4b52-9a3b-5e0a1d2c3b4f", password="other"),
        running_agent(
            api, socket_dir, "node-x", handlers=[Onvif(port=port, request_timeout=2)]
        ) as node,
    ):
        for name, properties in (("cams", [user, password]), ("broken", [user, missing])):
            await k.apply(
                configuration(name, handler="onvif", details=details, properties=properties)
            )

        async def authenticated() -> bool:
            found = await k.instances()
            return any(
                "ONVIF_DEVICE_MAC_ADDRESS" in i.spec.broker_properties for i in found.values()
            )

        await eventually(authenticated, f"{camera.xaddr} to be read with the password")
        await eventually(lambda: k.condition("broken", "InvalidProperties"), "the missing key")
        await eventually(lambda: "Sender not authorized" in caplog.text, "the refused password")
        written = [
            caplog.text,
            str(await k.read_configuration("cams")),
            str(await k.read_configuration("broken")),
            str(await core.list_namespaced_event(NAMESPACE)),
            str(await k.instances()),
            generate_latest(node.agent.metrics.registry).decode(),
        ]
    assert [SECRET in text for text in written] == [False] * len(written)
    assert naming.GROUP in written[1]  # what was searched is really there
