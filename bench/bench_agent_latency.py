"""Agent latency benchmark: device appearance and uncontended Allocate, one node.

One whole agent (embedded debugEcho) runs against the API emulator and a kubelet emulator, all
in this process, over real unix sockets.

1. Device appears: a debugEcho device is taken offline (offline grace 0, so its Instance goes
   and its plugin with it) and brought back with `set_offline`; measured from that call until
   the kubelet emulator shows the instance-level resource registered with all its slots Healthy
   and the configuration-level resource counting the device again.
2. Allocate: a direct v1beta1 Allocate of one free slot on the instance-level plugin's socket
   (what the kubelet does, over one kept-open channel), next to the bare grpc.aio unary round
   trip over a unix socket (GetDevicePluginOptions on a minimal server) in the same run.

Run: `python bench/bench_agent_latency.py [--quick]`. Prints numbers; never fails on them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc
from _common import (
    AgentProcess,
    Section,
    Stats,
    agent_settings,
    allocate_seconds,
    api_server,
    bare_round_trips,
    create_configuration,
    finish,
    kubelet_for,
    latencies_ms,
    percentile,
    plugin_socket,
    quiet_grpc,
    quiet_logs,
    round_trips,
    verdict,
)

from akri import naming
from akri.agent.agent import Agent
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    ContainerAllocateRequest,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.cluster import load_client
from akri.sim.kubelet import Kubelet

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

NODE = "node-0"
APPEAR_P99_TARGET_S = 0.100
ALLOCATE_P50_TARGET_S = 0.005
ALLOCATE_P99_TARGET_S = 0.025
WAIT_S = 10.0
"""Longest wait for one step before the run is reported as stuck (not a timing verdict)."""

Rows = list[tuple[str, str]]


@contextlib.asynccontextmanager
async def running(agent: Agent) -> Any:
    task = asyncio.create_task(agent.run(), name="agent")
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def until(kubelet: Kubelet, condition: Callable[[], bool], what: str) -> None:
    try:
        async with asyncio.timeout(WAIT_S):
            await kubelet.wait_for(condition)
    except TimeoutError:
        raise RuntimeError(f"timed out after {WAIT_S:g} s waiting for {what}") from None


def shows(kubelet: Kubelet, resource: str, healthy: int) -> bool:
    status = kubelet.resources().get(resource)
    return status is not None and status.registered and len(status.healthy_ids) == healthy


def gone(kubelet: Kubelet, resource: str) -> bool:
    status = kubelet.resources().get(resource)
    return status is None or not status.registered


async def bench_appearance(root: Path, kubeconfig: Path, appearances: int) -> Rows:
    capacity = 2
    configuration_resource = naming.resource_name("appear")
    instance_resource = naming.resource_name(naming.instance_name("appear", "probe"))
    echo = DebugEcho(shared=True, availability_file=None)
    async with (
        await load_client(kubeconfig) as api,
        kubelet_for(root, NODE) as kubelet,
    ):
        agent = Agent(agent_settings(root, NODE, offline_grace=0), api_client=api, handlers=[echo])
        async with running(agent):
            await create_configuration(api, "appear", ["steady", "probe"], capacity)
            await until(
                kubelet, lambda: shows(kubelet, instance_resource, capacity), "the first appearance"
            )
            samples = []
            for _ in range(appearances):
                echo.set_offline(["probe"])
                await until(
                    kubelet,
                    lambda: (
                        gone(kubelet, instance_resource)
                        and shows(kubelet, configuration_resource, 1)
                    ),
                    "the device to go",
                )
                started = time.perf_counter()
                echo.set_offline()
                await until(
                    kubelet,
                    lambda: (
                        shows(kubelet, instance_resource, capacity)
                        and shows(kubelet, configuration_resource, 2)
                    ),
                    "the device to appear",
                )
                samples.append(time.perf_counter() - started)
    p99 = percentile(samples, 99)
    return [
        ("appearances (offline -> online, Instance re-created)", str(len(samples))),
        ("device visible -> IL registered + CL updated", latencies_ms(samples)),
        (
            f"  target p99 <= {APPEAR_P99_TARGET_S * 1e3:.0f} ms",
            f"{verdict(p99 <= APPEAR_P99_TARGET_S)}",
        ),
    ]


def slots_in_order(instances: Sequence[str], capacity: int) -> list[tuple[str, str]]:
    """(resource, slot) pairs, one slot of each Instance in turn, so each Allocate is new."""
    return [
        (naming.resource_name(name), naming.slot_id(name, index))
        for index in range(capacity)
        for name in instances
    ]


async def timed_allocations(
    sockets: dict[str, Path], names: Sequence[str], capacity: int, allocations: int
) -> tuple[list[float], int, list[float]]:
    """Allocate distinct slots one at a time over kept-open channels, as a kubelet does:
    the latencies, how many were refused, and GetDevicePluginOptions round trips."""
    channels = {r: grpc.aio.insecure_channel(f"unix://{s}") for r, s in sockets.items()}
    try:
        stubs: dict[str, DevicePluginAsyncStub] = {
            resource: DevicePluginStub(channel) for resource, channel in channels.items()
        }
        plugin_trips = await round_trips(stubs[min(stubs)], allocations)
        samples, refused = [], 0
        for resource, slot in slots_in_order(names, capacity)[:allocations]:
            request = AllocateRequest(
                container_requests=[ContainerAllocateRequest(devices_ids=[slot])]
            )
            started = time.perf_counter()
            try:
                await stubs[resource].Allocate(request, timeout=WAIT_S)
            except grpc.aio.AioRpcError:
                refused += 1
            samples.append(time.perf_counter() - started)
    finally:
        for channel in channels.values():
            await channel.close()
    return samples, refused, plugin_trips


def allocation_setup(allocations: int, configuration: str) -> tuple[list[str], list[str], int]:
    """Descriptions, Instance names and capacity giving every Allocate a slot of its own."""
    descriptions = [f"dev{i}" for i in range(10)]
    names = [naming.instance_name(configuration, d) for d in descriptions]
    return descriptions, names, -(-allocations // len(descriptions))


def all_registered(kubelet: Kubelet, names: Sequence[str], capacity: int) -> bool:
    return all(shows(kubelet, naming.resource_name(name), capacity) for name in names)


async def allocate_in_process(root: Path, kubeconfig: Path, allocations: int) -> Measured:
    """The agent in this process, sharing its event loop with both emulators."""
    descriptions, names, capacity = allocation_setup(allocations, "inproc")
    echo = DebugEcho(shared=True, availability_file=None)
    async with await load_client(kubeconfig) as api, kubelet_for(root, NODE) as kubelet:
        agent = Agent(agent_settings(root, NODE), api_client=api, handlers=[echo])
        async with running(agent):
            await create_configuration(api, "inproc", descriptions, capacity)
            await until(kubelet, lambda: all_registered(kubelet, names, capacity), "IL plugins")
            assert agent.plugins is not None
            sockets = {}
            for name, plugin in agent.plugins.plugins.items():
                assert plugin.server is not None
                sockets[name] = plugin.server.socket
            before = allocate_seconds(agent.metrics.registry)
            samples, refused, trips = await timed_allocations(sockets, names, capacity, allocations)
            after = allocate_seconds(agent.metrics.registry)
    return Measured(samples, refused, trips, server_mean(before, after))


async def allocate_own_process(root: Path, kubeconfig: Path, allocations: int) -> Measured:
    """The agent in its own process, as deployed; the emulators and the client stay here."""
    descriptions, names, capacity = allocation_setup(allocations, "own")
    async with await load_client(kubeconfig) as api, kubelet_for(root, NODE) as kubelet:
        agent = await AgentProcess.spawn(root, kubeconfig, NODE)
        try:
            await create_configuration(api, "own", descriptions, capacity)
            await until(kubelet, lambda: all_registered(kubelet, names, capacity), "IL plugins")
            sockets = {
                naming.resource_name(name): plugin_socket(
                    kubelet.device_plugins_dir, naming.resource_name(name)
                )
                for name in names
            }
            before = await agent.stats()
            samples, refused, trips = await timed_allocations(sockets, names, capacity, allocations)
            after = await agent.stats()
        finally:
            await agent.stop()
    return Measured(samples, refused, trips, server_mean(seconds(before), seconds(after)))


def seconds(stats: Stats) -> dict[str, float]:
    return {"sum": stats.allocate_sum, "count": stats.allocate_count}


def server_mean(before: dict[str, float], after: dict[str, float]) -> float:
    return (after["sum"] - before["sum"]) / max(after["count"] - before["count"], 1)


@dataclass
class Measured:
    samples: list[float]
    refused: int
    plugin_trips: list[float]
    server_mean: float

    def rows(self, where: str, judged: bool) -> Rows:
        p50, p99 = percentile(self.samples, 50), percentile(self.samples, 99)
        targets = [
            (
                f"  target p50 <= {ALLOCATE_P50_TARGET_S * 1e3:.0f} ms",
                verdict(p50 <= ALLOCATE_P50_TARGET_S),
            ),
            (
                f"  target p99 <= {ALLOCATE_P99_TARGET_S * 1e3:.0f} ms",
                verdict(p99 <= ALLOCATE_P99_TARGET_S),
            ),
        ]
        return [
            (f"Allocate of 1 IL slot, agent {where}", latencies_ms(self.samples)),
            ("  refused (must be 0)", str(self.refused)),
            (
                "  server side (akri_allocation_latency_seconds mean)",
                f"{self.server_mean * 1e3:.2f} ms",
            ),
            *(targets if judged else []),
            ("  GetDevicePluginOptions on its IL plugin", latencies_ms(self.plugin_trips)),
        ]


async def bench_allocate(root: Path, kubeconfig: Path, allocations: int) -> Rows:
    own = await allocate_own_process(root / "own", kubeconfig, allocations)
    inproc = await allocate_in_process(root / "in", kubeconfig, allocations)
    bare = await bare_round_trips(root, allocations)
    ratio = percentile(own.samples, 50) / max(percentile(bare, 50), 1e-9)
    _, names, capacity = allocation_setup(allocations, "own")
    return [
        ("Instances x capacity (each Allocate takes a new slot)", f"{len(names)} x {capacity}"),
        *own.rows("in its own process", judged=True),
        # The same agent sharing one event loop with both emulators and the client: the
        # client side then also pays for the emulators' work; shown for comparison only.
        *inproc.rows("in the emulators' process", judged=False),
        ("bare grpc.aio unary round trip (unix socket)", latencies_ms(bare)),
        ("Allocate p50 (own process) / bare round trip p50", f"{ratio:.1f}x"),
    ]


async def bench(appearances: int, allocations: int) -> tuple[Rows, Rows]:
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with api_server(root) as (_, kubeconfig):
            appear = await bench_appearance(root / "a", kubeconfig, appearances)
            allocate = await bench_allocate(root / "b", kubeconfig, allocations)
    return appear, allocate


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (20 and 50)")
    # Every slot is listed by its plugin; capacity = allocations / 10 sets the list sizes.
    parser.add_argument("--appearances", type=int, default=None)
    parser.add_argument("--allocations", type=int, default=None)
    args = parser.parse_args()
    appearances = args.appearances or (20 if args.quick else 100)
    allocations = args.allocations or (50 if args.quick else 100)
    quiet_logs()
    started, load = time.monotonic(), os.getloadavg()[0]
    appear, allocate = asyncio.run(bench(appearances, allocations))
    finish(
        [
            Section("1. device appears -> kubelet sees IL and CL updates (one node)", appear),
            Section("2. Allocate latency, uncontended (one node)", allocate),
        ],
        started,
        load,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
