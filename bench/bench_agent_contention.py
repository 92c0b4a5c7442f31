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
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from _attribution import CpuShare
from _common import (
    Section,
    agent_settings,
    api_server,
    create_configuration,
    finish,
    kubelet_for,
    latencies_ms,
    metric,
    percentile,
    quiet_grpc,
    quiet_logs,
    raise_open_files,
    read_instances,
    verdict,
)
from kubernetes_asyncio import client

from akri import naming
from akri.agent.agent import Agent
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.proto.deviceplugin.v1beta1.api_pb2 import AllocateRequest, ContainerAllocateRequest
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.cluster import load_client
from akri.sim.kubelet import AdmissionError, Container, Kubelet

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

DEVICES = 4
REALISTIC_P99_S = 0.025
STRESS_P99_S = 0.250
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
    batches = decided_batches(nodes)
    share = CpuShare()
    started, cpu = time.perf_counter(), time.process_time()
    try:
        with share.sampling():
            outcomes = await asyncio.gather(*(allocate(*call) for call in calls))
    finally:
        for channel in channels:
            await channel.close()
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    conflicts = metric("akri_slot_conflict_retries_total") - conflicts
    batches = decided_batches(nodes) - batches
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
        (
            f"  target p99 <= {STRESS_P99_S * 1e3:.0f} ms",
            verdict(percentile([o.seconds for o in outcomes], 99) <= STRESS_P99_S),
        ),
        ("latency, granted", latencies_ms([o.seconds for o in granted])),
        ("wall time of the burst", f"{wall * 1e3:.0f} ms"),
        ("CPU of the burst (whole process)", f"{cpu * 1e3:.0f} ms"),
        ("  by component", share.summary()),
        ("409 conflicts retried (akri_slot_conflict_retries)", f"{conflicts:.0f}"),
        ("batches decided (group commit), all nodes", f"{batches} for {len(outcomes)} requests"),
        ("invariant violations read back (must be 0)", f"{len(violations)}"),
        ("  invariant holds", verdict(not violations)),
        *((f"  {v}", "") for v in violations[:5]),
    ]


def decided_batches(nodes: list[Node]) -> int:
    """Batches of Allocates the nodes' group commits have decided so far."""
    return sum(n.agent.plugins.commits.batches for n in nodes if n.agent.plugins is not None)


async def realistic(api: client.ApiClient, nodes: list[Node], pods: int) -> Rows:
    """Each node's kubelet admits its pods one at a time (as a kubelet does), all nodes at
    once, each pod asking for one slot of a shared Instance chosen at random (seeded). Kubelets
    pick the lowest free slot id, so two nodes asking for one Instance before either sees the
    other's grant meet, and one of them is refused, as on a cluster."""
    name = "real"
    descriptions = [f"{name}{i}" for i in range(DEVICES)]
    instances = [naming.instance_name(name, d) for d in descriptions]
    capacity = -(-pods // DEVICES)
    await create_configuration(api, name, descriptions, capacity)
    await until_listed(nodes, instances, capacity)
    per_node = [pods // len(nodes) + (n < pods % len(nodes)) for n in range(len(nodes))]
    share = CpuShare()
    started, cpu = time.perf_counter(), time.process_time()
    with share.sampling():
        admitted = await asyncio.gather(
            *(
                admit_in_turn(node, instances, count, random.Random(n))
                for n, (node, count) in enumerate(zip(nodes, per_node, strict=True))
            )
        )
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    outcomes = [o for found in admitted for o in found]
    granted = [o for o in outcomes if o.code == grpc.StatusCode.OK]
    stored = await read_instances(api)
    violations = invariant_violations(
        {i: stored[i].spec.device_usage for i in instances}, capacity, granted
    )
    p99 = percentile([o.seconds for o in outcomes], 99)
    return [
        ("pods (nodes x one at a time)", f"{len(outcomes)} ({len(nodes)} x {max(per_node)})"),
        ("capacity per Instance x Instances", f"{capacity} x {DEVICES}"),
        ("admitted / refused", f"{len(granted)} / {len(outcomes) - len(granted)}"),
        (
            "pod admission (kubelet's Allocate included)",
            latencies_ms([o.seconds for o in outcomes]),
        ),
        (f"  target p99 <= {REALISTIC_P99_S * 1e3:.0f} ms", verdict(p99 <= REALISTIC_P99_S)),
        ("wall time", f"{wall * 1e3:.0f} ms"),
        ("CPU (whole process)", f"{cpu * 1e3:.0f} ms"),
        ("  by component", share.summary()),
        ("invariant violations read back (must be 0)", f"{len(violations)}"),
        ("  invariant holds", verdict(not violations)),
        *((f"  {v}", "") for v in violations[:5]),
    ]


async def admit_in_turn(
    node: Node, instances: list[str], count: int, rng: random.Random
) -> list[Outcome]:
    outcomes = []
    for i in range(count):
        instance = rng.choice(instances)
        resource = naming.resource_name(instance)
        started = time.perf_counter()
        code, slot = grpc.StatusCode.OK, ""
        try:
            pod = await node.kubelet.admit(
                f"{node.name}-pod-{i}",
                f"pod-{i}",
                "default",
                containers=[Container("c", {resource: 1})],
            )
            (slot,) = pod.ids("c", resource)
        except AdmissionError:
            code = grpc.StatusCode.FAILED_PRECONDITION
        outcomes.append(Outcome(node.name, instance, slot, time.perf_counter() - started, code))
    return outcomes


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


async def bench(nodes: int, requests: int, pods: int) -> tuple[Rows, Rows, Rows]:
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with (
            api_server(root) as (_, kubeconfig),
            await load_client(kubeconfig) as api,
            running_nodes(api, root, nodes) as running,
        ):
            real = await realistic(api, running, pods)
            ample = await scenario(
                api, running, "ample", nodes * requests // DEVICES, requests, True
            )
            scarce = await scenario(api, running, "scarce", requests // DEVICES, requests, False)
    return real, ample, scarce


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 nodes x 16 requests")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None, help="per node, multiple of 4")
    parser.add_argument("--pods", type=int, default=None, help="realistic case, all nodes")
    args = parser.parse_args()
    nodes = args.nodes or (4 if args.quick else 8)
    requests = args.requests or (16 if args.quick else 32)
    pods = args.pods or (50 if args.quick else 200)
    quiet_logs()
    # Refusals in the scarce scenario are the expected outcome, one warning each.
    logging.getLogger("akri.agent.plugins.servicer").setLevel(logging.ERROR)
    raise_open_files(65536)
    began, load = time.monotonic(), os.getloadavg()[0]
    real, ample, scarce = asyncio.run(bench(nodes, requests, pods))
    finish(
        [
            Section(
                f"3. kubelet-realistic Allocate ({nodes} nodes, one pod at a time each)",
                real,
                "realistic: ",
            ),
            Section(
                f"3a. contended Allocate, ample capacity ({nodes} nodes, one process)",
                ample,
                "stress, ample capacity: ",
            ),
            Section(
                f"3b. contended Allocate, scarce capacity ({nodes} nodes)",
                scarce,
                "stress, scarce capacity: ",
            ),
        ],
        began,
        load,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
