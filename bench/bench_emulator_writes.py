"""What the API emulator's CPU costs per Instance write, alone in its own process.

The contention benchmark runs the emulators in its own process beside its client, where their
CPU is sampled, not counted. Here the API emulator (with the project's CRDs) runs in a child
process and its CPU is read from /proc, so the numbers are the emulator's alone: a shared
Instance of capacity 50 (a 50-slot `deviceUsage`, as in the contention benchmark) is written
over HTTP, one slot changed per write and guarded by the last resourceVersion, while 9 watch
streams (8 agents and the controller on the benchmark's cluster) receive every change; then
the same number of stale writes, refused with 409 as the agents' lost races are. Every write
passes the API server's whole path: request parsing, admission (defaults, pruning, schema and
CEL validation), storage and the watch events to every watcher.
Run: `python bench/bench_emulator_writes.py [--writes N]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from _common import Section, api_server, cpu_seconds, finish, quiet_logs

from akri import naming

WATCHERS = 9
CAPACITY = 50
NAMESPACE = "default"
INSTANCE = "bench-0a1b2c"
STARTUP_S = 60.0
"""A bound on the child's start on a busy machine, not a timing verdict."""
JSON = dict[str, Any]


def serve(workdir: str, ready: Any) -> None:
    """The child: the API emulator until it is terminated."""
    quiet_logs()

    async def run() -> None:
        async with api_server(Path(workdir)):
            ready.set()
            await asyncio.Event().wait()

    asyncio.run(run())


@contextlib.contextmanager
def emulator_process(workdir: Path) -> Iterator[multiprocessing.process.BaseProcess]:
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    process = context.Process(target=serve, args=(str(workdir), ready), daemon=True)
    process.start()
    try:
        if not ready.wait(STARTUP_S):
            raise RuntimeError("the API emulator did not start")
        yield process
    finally:
        process.terminate()
        process.join()


def server_url(kubeconfig: Path) -> str:
    config = yaml.safe_load(kubeconfig.read_text())
    return str(config["clusters"][0]["cluster"]["server"])


def instance() -> JSON:
    return {
        "apiVersion": f"{naming.GROUP}/{naming.VERSION}",
        "kind": "Instance",
        "metadata": {"name": INSTANCE, "namespace": NAMESPACE},
        "spec": {
            "configurationName": "bench",
            "capacity": CAPACITY,
            "shared": True,
            "nodes": [f"node-{n}" for n in range(8)],
            "brokerProperties": {"DEBUG_ECHO_DESCRIPTION": "bench"},
            "deviceUsage": {naming.slot_id(INSTANCE, i): "" for i in range(CAPACITY)},
        },
    }


class Watchers:
    """WATCHERS watch streams from one resourceVersion, each counting the events it reads."""

    def __init__(self, session: aiohttp.ClientSession, url: str, since: str) -> None:
        self._session, self._url, self._since = session, url, since
        self.events = [0] * WATCHERS
        self._opened = 0
        self._changed = asyncio.Event()

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Watchers]:
        tasks = [asyncio.create_task(self._follow(i)) for i in range(WATCHERS)]
        try:
            await self.until(lambda: self._opened == WATCHERS)
            yield self
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def until(self, condition: Callable[[], bool]) -> None:
        async with asyncio.timeout(STARTUP_S):
            while not condition():
                self._changed.clear()
                await self._changed.wait()

    async def _follow(self, index: int) -> None:
        params = {"watch": "true", "resourceVersion": self._since}
        async with self._session.get(self._url, params=params) as response:
            self._opened += 1
            self._changed.set()
            async for _ in response.content:
                self.events[index] += 1
                self._changed.set()


async def measure(base: str, pid: int, writes: int) -> list[tuple[str, str]]:
    collection = f"{base}/apis/{naming.GROUP}/{naming.VERSION}/namespaces/{NAMESPACE}/instances"
    item = f"{collection}/{INSTANCE}"
    async with aiohttp.ClientSession() as session:
        async with session.post(collection, json=instance()) as response:
            stored: JSON = await response.json()
            assert response.status == 201, stored
        since = stored["metadata"]["resourceVersion"]
        async with Watchers(session, collection, since).running() as watchers:
            cpu, started = cpu_seconds(pid), time.perf_counter()
            for i in range(writes):
                slot = naming.slot_id(INSTANCE, i % CAPACITY)
                stored["spec"]["deviceUsage"][slot] = "" if (i // CAPACITY) % 2 else "node-0"
                async with session.put(item, json=stored) as response:
                    stored = await response.json()
                    assert response.status == 200, stored
            await watchers.until(lambda: min(watchers.events) >= writes)
            write_cpu, wall = cpu_seconds(pid) - cpu, time.perf_counter() - started
        stale = json.loads(json.dumps(stored))
        stale["metadata"]["resourceVersion"] = "1"
        cpu = cpu_seconds(pid)
        for _ in range(writes):
            async with session.put(item, json=stale) as response:
                await response.read()
                assert response.status == 409
        conflict_cpu = cpu_seconds(pid) - cpu
    return [
        ("Instance writes (one slot changed each, 50-slot deviceUsage)", f"{writes}"),
        ("watch streams, events each received", f"{WATCHERS}, {min(watchers.events)}"),
        ("emulator CPU per write, its watch events included", f"{write_cpu / writes * 1e3:.2f} ms"),
        ("  wall time per write (sequential)", f"{wall / writes * 1e3:.2f} ms"),
        ("emulator CPU per stale write (409)", f"{conflict_cpu / writes * 1e3:.2f} ms"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=1000)
    args = parser.parse_args()
    quiet_logs()
    began, load = time.monotonic(), os.getloadavg()[0]
    with (
        tempfile.TemporaryDirectory(prefix="akri-bench-") as workdir,
        emulator_process(Path(workdir)) as process,
    ):
        assert process.pid is not None  # started
        base = server_url(Path(workdir) / "kubeconfig")
        rows = asyncio.run(measure(base, process.pid, args.writes))
    finish([Section("API emulator, in its own process", rows, "api emulator: ")], began, load)


if __name__ == "__main__":
    main()
