"""Run by tests/sim/test_pod_network.py in a child process, as `akri sim` enters its network:
enter the cluster's pod network, make a pod sandbox on each of two nodes, check who reaches
whom, destroy them, and print what was seen as JSON."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

from akri.sim.apiserver.kubernetes_service import SERVICE_IP, SERVICE_PORT
from akri.sim.podnet.cluster import enter
from akri.sim.podnet.sandbox import PodSandbox

CONNECT = (
    "import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), 5)"
    ".sendall(b'hello')"
)
SERVE = (
    "import socket; s = socket.create_server(('0.0.0.0', 8080)); print('up', flush=True);"
    " c, _ = s.accept(); print(c.recv(5).decode(), flush=True)"
)


async def _reaches(prefix: list[str], host: str, port: int) -> bool:
    process = await asyncio.create_subprocess_exec(
        *prefix, sys.executable, "-c", CONNECT, host, str(port),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    return await process.wait() == 0


def _links() -> list[str]:
    listed = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return sorted(line.split(":")[1].strip().split("@")[0] for line in listed.stdout.splitlines())


async def probe(network: Any) -> dict[str, Any]:
    seen: dict[str, Any] = {"netns": os.readlink("/proc/self/ns/net")}
    first, second = network.nodes
    a = PodSandbox(first, first.allocate())
    b = PodSandbox(second, second.allocate())
    await a.create()
    await b.create()
    seen["addresses"] = [a.address, b.address]
    seen["pause"] = [a.enter[1].split("/")[2], b.enter[1].split("/")[2]]
    seen["links_with_pods"] = _links()
    server = await asyncio.create_subprocess_exec(
        *a.enter, sys.executable, "-c", SERVE, stdout=asyncio.subprocess.PIPE
    )
    assert server.stdout is not None
    await server.stdout.readline()  # up
    seen["pod_to_pod_across_nodes"] = await _reaches(b.enter, a.address, 8080)
    seen["received"] = (await server.stdout.readline()).decode().strip()
    await server.wait()
    api = await asyncio.start_server(lambda r, w: w.close(), SERVICE_IP, SERVICE_PORT)
    seen["pod_to_api_service"] = await _reaches(b.enter, SERVICE_IP, SERVICE_PORT)
    api.close()
    seen["own_loopback_only"] = not await _reaches(a.enter, "127.0.0.1", network.port)
    await a.destroy()
    await b.destroy()
    seen["links_after"] = _links()
    return seen


def main() -> None:
    network = enter(2)
    print(json.dumps(asyncio.run(probe(network))), flush=True)


if __name__ == "__main__":
    main()
