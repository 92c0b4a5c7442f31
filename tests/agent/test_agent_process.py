"""`akri-agent` as a process: settings errors, a run against the emulator, SIGTERM; telemetry."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client

from akri.sim.apiserver import ApiServer
from tests.agent.running_agents import Api, configuration, running_agent
from tests.support import DEADLINE_S, eventually

AGENT = [sys.executable, "-m", "akri.agent.main"]
EXIT_DEADLINE_S = 2 * DEADLINE_S  # a Python process starting and exiting: only a hang reaches it


def agent_environment(**variables: str) -> dict[str, str]:
    """The test's environment without anything the agent reads, plus `variables`."""
    ours = {"KUBECONFIG", "AGENT_NODE_NAME", "ENABLE_DEBUG_ECHO", "AKRI_NAMESPACE", "METRICS_PORT"}
    return {k: v for k, v in os.environ.items() if k not in ours} | variables


@contextlib.asynccontextmanager
async def agent_process(env: dict[str, str]) -> AsyncIterator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        *AGENT, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def test_a_missing_node_name_exits_2_with_the_reason() -> None:
    async with agent_process(agent_environment(OFFLINE_GRACE="later")) as process:
        async with asyncio.timeout(EXIT_DEADLINE_S):
            _, stderr = await process.communicate()
    assert process.returncode == 2
    assert stderr.decode().strip() == (
        "akri-agent: invalid settings: AGENT_NODE_NAME: is required; OFFLINE_GRACE: 'later' is "
        "not a duration (use e.g. 300s, 5m, 1.5s, 250ms or plain seconds)"
    )


async def test_an_unusable_kubeconfig_exits_1_with_the_error(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    env = agent_environment(AGENT_NODE_NAME="node-p", KUBECONFIG=str(kubeconfig))
    async with agent_process(env) as process:
        async with asyncio.timeout(EXIT_DEADLINE_S):
            _, stderr = await process.communicate()
    assert process.returncode == 1
    lines = [json.loads(line) for line in stderr.decode().splitlines()]
    (failure,) = [line for line in lines if line["level"] == "ERROR"]
    assert failure["message"] == "akri-agent failed"
    assert "current-context" in failure["exception"]


async def test_the_agent_discovers_and_stops_cleanly_on_sigterm(
    apiserver: ApiServer, api: client.ApiClient, socket_dir: Path, tmp_path: Path
) -> None:
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    env = agent_environment(
        AGENT_NODE_NAME="node-p",
        KUBECONFIG=str(kubeconfig),
        ENABLE_DEBUG_ECHO="1",
        DEBUG_ECHO_AVAILABILITY_FILE=str(tmp_path / "availability"),
        DEVICE_PLUGINS_DIR=str(socket_dir / "dp"),
        POD_RESOURCES_SOCKET=str(socket_dir / "pr.sock"),
        DISCOVERY_HANDLERS_DIRECTORY=str(socket_dir),
        METRICS_PORT="0",
    )
    k = Api(api)
    async with agent_process(env) as process:
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of("cfg-8120fe", ["node-p"]), "an Instance from the agent")
        await eventually(
            lambda: (socket_dir / "agent-registration.sock").exists(), "the registration socket"
        )
        process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(EXIT_DEADLINE_S):
            _, stderr = await process.communicate()
    assert process.returncode == 0
    assert not (socket_dir / "agent-registration.sock").exists()
    assert not list((socket_dir / "dp").glob("*.sock"))
    lines = [json.loads(line) for line in stderr.decode().splitlines()]
    created = [line for line in lines if line["message"] == "created Instance cfg-8120fe"]
    assert len(created) == 1
    assert created[0]["node"] == "node-p"
    assert created[0]["level"] == "INFO"
    assert created[0]["logger"] == "akri.agent.publisher"
    assert {"time", "level", "logger", "message", "node"} <= lines[0].keys()
    # Instances stay: a stopping agent is not a device going away.
    assert await k.nodes_of("cfg-8120fe", ["node-p"])


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def test_telemetry_reports_readiness_and_metrics(
    api: client.ApiClient, socket_dir: Path
) -> None:
    port = free_port()
    k = Api(api)
    async with (
        running_agent(api, socket_dir, "node-t", metrics_port=port),
        aiohttp.ClientSession(f"http://127.0.0.1:{port}") as http,
    ):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of("cfg-8120fe", ["node-t"]), "an Instance")
        async with http.get("/readyz") as ready, http.get("/healthz") as healthy:
            assert (ready.status, healthy.status) == (200, 200)

        async def counted() -> bool:
            async with http.get("/metrics") as metrics:
                text = await metrics.text()
            return 'akri_instance_count{configuration="cfg",is_shared="true"} 2.0' in text

        await eventually(counted, "the Instance count in /metrics")


@pytest.mark.parametrize("style", ["json", "text"])
def test_log_lines_name_the_node(style: str) -> None:
    import io
    import logging

    from akri import logs

    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        logs.configure("INFO", style, stream, node="node-x")  # type: ignore[arg-type]
        logging.getLogger("akri.test").info("hello %s", "there")
    finally:
        root.handlers[:], _ = saved
        root.setLevel(saved[1])
    line = stream.getvalue().strip()
    if style == "json":
        entry = json.loads(line)
        assert entry["message"] == "hello there"
        assert (entry["node"], entry["level"], entry["logger"]) == ("node-x", "INFO", "akri.test")
    else:
        assert line.endswith("INFO akri.test [node-x]: hello there")
