"""The real kubectl as a test drives it: a subprocess with its own kubeconfig and HOME."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from tests.support import DEADLINE_S

needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")


class Kubectl:
    """Runs kubectl with a kubeconfig and a private discovery cache (under `home`)."""

    def __init__(self, kubeconfig: Path, home: Path, namespace: str = "default") -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": str(kubeconfig),
        }
        self.namespace = namespace

    async def spawn(self, *args: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            "kubectl", "-n", self.namespace, *args,
            env=self.env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    async def result(self, *args: str, deadline_s: float = DEADLINE_S) -> tuple[int, str, str]:
        """kubectl's exit code, stdout and stderr, whichever way it ends."""
        process = await self.spawn(*args)
        try:
            async with asyncio.timeout(deadline_s):
                out, err = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def __call__(self, *args: str, ok: bool = True, deadline_s: float = DEADLINE_S) -> str:
        """kubectl's stdout when it succeeds (`ok`), else its stderr; fails the test otherwise."""
        code, out, err = await self.result(*args, deadline_s=deadline_s)
        if ok:
            assert code == 0, err
            return out
        assert code != 0, out
        return err
