"""The soak's programs: one process each, as Kubernetes runs one replica per pod."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from aiohttp import web

from akri.sim.kubelet import Kubelet
from akri.sim.soak.harness import Node, Program, read_readiness


async def test_starting_a_running_program_starts_no_second_process(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    program = Program("p", sleeper, dict(os.environ), tmp_path / "p.log", lambda *_: None)
    await program.start()
    first = program.process
    assert first is not None
    try:
        await program.start()
        assert program.process is first
    finally:
        await program.stop()
        if first.returncode is None:  # left behind by a second start
            first.kill()
            await first.wait()
    assert first.returncode is not None


async def test_an_agent_counts_as_up_once_ready_not_once_started(tmp_path: Path) -> None:
    """The soak's bounded rules wait on a node only once its agent is ready: at load 15 a
    restarted agent took 25-35 s to start, which the checker counted as an agent failing
    to publish its devices (seed 4242, node-0 back from a node loss)."""
    answer = 503

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(status=answer)

    app = web.Application()
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    agent = Program("agent", sleeper, dict(os.environ), tmp_path / "a.log", lambda *_: None)
    node = Node("n", Kubelet("n", tmp_path, tmp_path), agent, tmp_path / "availability")
    node.readyz = f"http://127.0.0.1:{port}/readyz"
    try:
        await agent.start()
        await read_readiness(node)
        assert not node.agent_up  # started, not ready
        answer = 200
        await read_readiness(node)
        assert node.agent_up
        await agent.kill()
        await agent.start()
        assert not node.agent_up  # a new process: ready again only when it says so
        await read_readiness(node)
        assert node.agent_up
    finally:
        await agent.stop()
        await runner.cleanup()
