"""A pod's network namespace, as a container runtime's pod sandbox holds it.

A pause process (`sleep`) in a new network namespace keeps it alive; one end of a veth pair
is the pod's `eth0` with its address and a default route to its node's gateway, the other
end is on the cluster's bridge. The pod's containers join the namespace with `nsenter`.
Destroying the sandbox deletes the pair and ends the pause process, and with it the namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from typing import Final

from akri.sim.podnet.addresses import BRIDGE, NODE_PREFIX, NodeNetwork, veth_name

PARENT_DEATH: Final = ("setpriv", "--pdeathsig", "KILL", "--")
"""Prefix of every process the runtime starts: it dies with the simulator, however it ends."""
_PAUSE_SCRIPT: Final = "ip link set lo up && echo up && exec sleep infinity"


async def run(argv: Sequence[str], stdin: str = "") -> None:
    """Run a network command; OSError with its message when it fails."""
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, error = await process.communicate(stdin.encode())
    if process.returncode:
        raise OSError(f"{' '.join(argv)}: {error.decode().strip()}")


class PodSandbox:
    """`await sandbox.create()`, run containers under `sandbox.enter`, `await sandbox.destroy()`."""

    def __init__(self, node: NodeNetwork, address: str) -> None:
        self.node = node
        self.address = address
        self._pause: asyncio.subprocess.Process | None = None
        self._veth = veth_name(address)

    @property
    def enter(self) -> list[str]:
        """The command prefix that runs a program in the pod's network namespace."""
        if self._pause is None:
            raise RuntimeError("the sandbox is not created")
        return ["nsenter", f"--net=/proc/{self._pause.pid}/ns/net", "--"]

    async def create(self) -> None:
        """The namespace, its loopback and eth0; OSError when a step fails (nothing left)."""
        try:
            pause = self._pause = await asyncio.create_subprocess_exec(
                *PARENT_DEATH, "unshare", "--net", "--", "sh", "-c", _PAUSE_SCRIPT,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
            assert pause.stdout is not None
            if await pause.stdout.readline() != b"up\n":  # the namespace exists from here on
                raise OSError("the pod's network namespace was not made")
            veth, pid = self._veth, str(pause.pid)
            await run(
                ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", pid]
            )
            await run(["ip", "link", "set", veth, "master", BRIDGE, "up"])
            inside = (
                f"address add {self.address}/{NODE_PREFIX} dev eth0\n"
                "link set eth0 up\n"
                f"route add default via {self.node.gateway}\n"
            )
            await run([*self.enter, "ip", "-batch", "-"], inside)
        except BaseException:
            await self.destroy()
            raise

    async def destroy(self) -> None:
        """Delete the veth pair and end the pause process (and so the namespace); idempotent."""
        pause, self._pause = self._pause, None
        if pause is None:
            return
        with contextlib.suppress(OSError):  # never made, or gone with the namespace
            await run(["ip", "link", "delete", self._veth])
        with contextlib.suppress(ProcessLookupError):
            pause.kill()
        await pause.wait()
