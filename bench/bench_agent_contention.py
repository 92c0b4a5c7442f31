"""Agent contention benchmark: 8 nodes x 32 concurrent Allocates on 4 shared Instances.

Eight whole agents (each with its own kubelet emulator and embedded debugEcho) share one API
emulator, all in this process. Every node sends 32 instance-level Allocates of one slot at
once, straight to its plugins' sockets, spread over the 4 Instances; 256 requests race on 4
objects, so most writes meet a newer resourceVersion (409) and decide again.

- ample: capacity 64, every request names a slot no other request names: all 256 must be
  granted; the cost of contention is latency and conflict retries.
- scarce: capacity 8, all 8 nodes ask for the same 32 slots: exactly 32 can be granted, the
  rest must be refused.

Afterwards the Instances are read back from the API and the invariant checked: held slots <=
capacity, no slot granted to two nodes, every granted slot held by its node. Violations must
be 0. Run: `python bench/bench_agent_contention.py [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from _common import (
    agent_settings,
    api_server,
    create_configuration,
    kubelet_for,
    latencies_ms,
    metric,
    quiet_grpc,
    quiet_logs,
    raise_open_files,
    read_instances,
    summary,
    table,
    verdict,
)
from kubernetes_asyncio import client

from akri import naming
from akri.agent.agent import Agent
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.proto.deviceplugin.v1beta1.api_pb2 import AllocateRequest, ContainerAllocateRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.cluster import load_client
from akri.sim.kubelet import Kubelet

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

DEVICES = 4
WAIT_S = 30.0
Rows = list[tuple[str, str]]


@dataclass
class Node:
    name: str
    agent: Agent
    kubelet: Kubelet


@dataclass
class Outcome:
    node: str
    instance: str
    slot: str
    seconds: float
    code: grpc.StatusCode


@contextlib.asynccontextmanager
async def running_nodes(api: client.ApiClient, root: Path, count: int) -> AsyncIterator[list[Node]]:
    async with contextlib.AsyncExitStack() as stack:
        nodes, tasks = [], []
        for i in range(count):
            name = f"node-{i}"
            kubelet = await stack.enter_async_context(kubelet_for(root, name))
            # Slots Allocated straight to the plugin are unknown to the kubelet; keep them.
            settings = agent_settings(root, name, reclaim_grace=3600)
            echo = DebugEcho(shared=True, availability_file=None)
            agent = Agent(settings, api_client=api, handlers=[echo])
            tasks.append(asyncio.create_task(agent.run(), name=f"agent {name}"))
            nodes.append(Node(name, agent, kubelet))
        try:
            yield nodes
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def until_listed(nodes: list[Node], instances: list[str], capacity: int) -> None:
    def listed(kubelet: Kubelet) -> bool:
        resources = kubelet.resources()
        return all(
            (status := resources.get(naming.resource_name(name))) is not None
            and status.registered
            and len(status.healthy_ids) == capacity
            for name in instances
        )

    async def wait(kubelet: Kubelet) -> None:
        await kubelet.wait_for(lambda: listed(kubelet))

    async with asyncio.timeout(WAIT_S):
        await asyncio.gather(*(wait(node.kubelet) for node in nodes))


async def allocate(stub: DevicePluginAsyncStub, node: str, instance: str, slot: str) -> Outcome:
    request = AllocateRequest(container_requests=[ContainerAllocateRequest(devices_ids=[slot])])
    started = time.perf_counter()
    code = grpc.StatusCode.OK
    try:
        await stub.Allocate(request, timeout=WAIT_S)
    except grpc.aio.AioRpcError as error:
        code = error.code()
    return Outcome(node, instance, slot, time.perf_counter() - started, code)


async def scenario(
    api: client.ApiClient,
    nodes: list[Node],
    name: str,
    capacity: int,
    requests: int,
    distinct: bool,
) -> Rows:
    descriptions = [f"{name}{i}" for i in range(DEVICES)]
    instances = [naming.instance_name(name, d) for d in descriptions]
    await create_configuration(api, name, descriptions, capacity)
    await until_listed(nodes, instances, capacity)
    channels: list[grpc.aio.Channel] = []
    calls = []
    for n, node in enumerate(nodes):
        assert node.agent.plugins is not None
        plugins = node.agent.plugins.plugins
        stubs: dict[str, DevicePluginAsyncStub] = {}
        for instance in instances:
            server = plugins[naming.resource_name(instance)].server
            assert server is not None
            channel = grpc.aio.insecure_channel(f"unix://{server.socket}")
            await channel.channel_ready()
            channels.append(channel)
            stubs[instance] = DevicePluginStub(channel)
        for j in range(requests):
            instance = instances[j % DEVICES]
            index = j // DEVICES + (n * requests // DEVICES if distinct else 0)
            calls.append((stubs[instance], node.name, instance, naming.slot_id(instance, index)))
    conflicts = metric("akri_slot_conflict_retries_total")
    started = time.perf_counter()
    try:
        outcomes = await asyncio.gather(*(allocate(*call) for call in calls))
    finally:
        for channel in channels:
            await channel.close()
    wall = time.perf_counter() - started
    conflicts = metric("akri_slot_conflict_retries_total") - conflicts
    granted = [o for o in outcomes if o.code == grpc.StatusCode.OK]
    refused = [o for o in outcomes if o.code == grpc.StatusCode.FAILED_PRECONDITION]
    failed = [o for o in outcomes if o not in granted and o not in refused]
    stored = await read_instances(api)
    violations = invariant_violations(
        {i: stored[i].spec.device_usage for i in instances}, capacity, granted
    )
    expected = len(outcomes) if distinct else DEVICES * capacity
    return [
        (
            "requests (nodes x per node, all at once)",
            f"{len(outcomes)} ({len(nodes)} x {requests})",
        ),
        ("capacity per Instance x Instances", f"{capacity} x {DEVICES}"),
        ("granted / refused / other errors", f"{len(granted)} / {len(refused)} / {len(failed)}"),
        *((f"  {code.name}", str(n)) for code, n in Counter(o.code for o in failed).items()),
        ("  granted as expected", f"{verdict(len(granted) == expected)} (expected {expected})"),
        ("latency, all requests", latencies_ms([o.seconds for o in outcomes])),
        ("latency, granted", latencies_ms([o.seconds for o in granted])),
        ("wall time of the burst", f"{wall * 1e3:.0f} ms"),
        ("409 conflicts retried (akri_slot_conflict_retries)", f"{conflicts:.0f}"),
        ("invariant violations read back (must be 0)", f"{len(violations)}"),
        ("  invariant holds", verdict(not violations)),
        *((f"  {v}", "") for v in violations[:5]),
    ]


def invariant_violations(
    usage: dict[str, dict[str, str]], capacity: int, granted: list[Outcome]
) -> list[str]:
    problems = []
    for instance, slots in usage.items():
        held = {slot: holder for slot, holder in slots.items() if holder}
        if len(held) > capacity:
            problems.append(f"{instance}: {len(held)} slots held > capacity {capacity}")
        unknown = set(slots) - set(naming.slot_ids(instance, capacity))
        if unknown:
            problems.append(f"{instance}: unknown slots {sorted(unknown)}")
    grantees: dict[str, set[str]] = {}
    for outcome in granted:
        grantees.setdefault(outcome.slot, set()).add(outcome.node)
        holder = usage[outcome.instance].get(outcome.slot, "")
        if holder != outcome.node:
            problems.append(f"{outcome.slot} granted to {outcome.node}, held by {holder!r}")
    problems += [f"{s} granted to {sorted(n)}" for s, n in grantees.items() if len(n) > 1]
    return problems


async def bench(nodes: int, requests: int) -> tuple[Rows, Rows]:
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with (
            api_server(root) as (_, kubeconfig),
            await load_client(kubeconfig) as api,
            running_nodes(api, root, nodes) as running,
        ):
            ample = await scenario(
                api, running, "ample", nodes * requests // DEVICES, requests, True
            )
            scarce = await scenario(api, running, "scarce", requests // DEVICES, requests, False)
    return ample, scarce


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 nodes x 16 requests")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None, help="per node, multiple of 4")
    args = parser.parse_args()
    nodes = args.nodes or (4 if args.quick else 8)
    requests = args.requests or (16 if args.quick else 32)
    quiet_logs()
    # Refusals in the scarce scenario are the expected outcome, one warning each.
    logging.getLogger("akri.agent.plugins.servicer").setLevel(logging.ERROR)
    raise_open_files(65536)
    began = time.monotonic()
    ample, scarce = asyncio.run(bench(nodes, requests))
    print(table(ample, f"3a. contended Allocate, ample capacity ({nodes} nodes, one process)"))
    print()
    print(table(scarce, f"3b. contended Allocate, scarce capacity ({nodes} nodes)"))
    print()
    print(summary(ample, scarce))
    print(f"\n(ran {time.monotonic() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
