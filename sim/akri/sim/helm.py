"""Helm actions on a chart by the real Helm engine (helm-sdkpy), as `helm` commands would run.

The engine reads HELM_DRIVER only from the environment its process started with, and its
memory driver keeps releases in that process, so the actions of one release's life (install,
upgrade, uninstall) run in one child process, `python -m akri.sim.helm`: one JSON request per
line on stdin, one answer per line on stdout.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any


async def _session() -> None:
    import helm_sdkpy

    loop = asyncio.get_running_loop()
    configs: dict[tuple[str, str], Any] = {}  # the memory driver's releases live in its config
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        request = json.loads(line)
        key = (request["namespace"], request["kubeconfig"])
        if key not in configs:
            configs[key] = helm_sdkpy.Configuration(namespace=key[0], kubeconfig=key[1])
        config = configs[key]
        release, action, chart = request["release"], request["action"], request["chart"]
        try:
            if action == "install":
                done = await helm_sdkpy.Install(config).run(
                    release, chart, values=request["values"], create_namespace=True,
                    wait=request["wait"], timeout=request["timeout"],
                )  # fmt: skip
            elif action == "upgrade":
                done = await helm_sdkpy.Upgrade(config).run(
                    release, chart, values=request["values"], wait=request["wait"],
                    timeout=request["timeout"],
                )  # fmt: skip
            else:
                done = await helm_sdkpy.Uninstall(config).run(
                    release, wait=True, timeout=request["timeout"]
                )
            answer: dict[str, Any] = {"ok": {"status": str(done.get("info", {}).get("status"))}}
        except helm_sdkpy.HelmError as error:
            answer = {"error": str(error)}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


class HelmSession:
    """`async with HelmSession(kubeconfig, chart) as helm: await helm("install", release, ns,
    values)`: a child process running Helm actions in order, as `helm` commands in one shell."""

    def __init__(self, kubeconfig: Path, chart: Path) -> None:
        self._kubeconfig = str(kubeconfig)
        self._chart = str(chart.resolve())
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> HelmSession:
        # Its own session: a Ctrl-C at the terminal is the simulator's to handle (it ends the
        # session by leaving this block), not a KeyboardInterrupt in the middle of an action.
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "akri.sim.helm",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "HELM_DRIVER": "memory"}, start_new_session=True,
        )  # fmt: skip
        return self

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        """Let the actions end after a normal exit; left by an error or cancellation (a
        Ctrl-C while an install waits for its pods), the session is killed at once."""
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            try:
                if kind is None:
                    async with asyncio.timeout(30):
                        await self._process.wait()
            finally:
                if self._process.returncode is None:
                    self._process.kill()
                    await self._process.wait()

    async def __call__(
        self,
        action: str,
        release: str,
        namespace: str,
        values: Mapping[str, Any] | None = None,
        seconds: int = 180,
        *,
        wait: bool = True,
    ) -> dict[str, Any]:
        """The action's outcome: {"ok": {"status": ...}} or {"error": message}. `wait`: until
        the release's workloads are ready (install, upgrade), as `helm --wait`."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise RuntimeError("the helm session is not running")
        request = {
            "action": action, "release": release, "namespace": namespace, "chart": self._chart,
            "values": dict(values or {}), "timeout": seconds, "kubeconfig": self._kubeconfig,
            "wait": wait,
        }  # fmt: skip
        process.stdin.write((json.dumps(request) + "\n").encode())
        await process.stdin.drain()
        async with asyncio.timeout(seconds + 30):
            line = await process.stdout.readline()
        if not line:
            raise RuntimeError("the helm session ended")
        answer: dict[str, Any] = json.loads(line)
        return answer


if __name__ == "__main__":
    asyncio.run(_session())
