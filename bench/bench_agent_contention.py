"""Agent contention benchmark: 8 nodes admitting pods at once, and 8 x 32 concurrent Allocates.

Eight agents, each with its own kubelet emulator and embedded debugEcho, share one API emulator
and 4 shared Instances. Each agent is the real `akri-agent` program in its own process, as on a
cluster, where every node has its own CPU (here all share this machine's cores); the API
emulator, the kubelet emulators and the client run in this process. `--in-process` runs the
agents on this process's event loop instead, as before (one core for everything; the CPU is
attributed to agent and emulators by sampling).

- realistic: each node's kubelet admits its pods one at a time, all nodes at once. Its floor
  is measured in the same run: one node admitting pods one at a time while the others idle
  (same agents, same emulators), and a bare grpc.aio round trip; latencies are also given as
  ratios to that uncontended admission.
- stress, ample: every node sends 32 instance-level Allocates of one slot at once, straight to
  its plugins' sockets, spread over the 4 Instances (capacity 64, no two requests name one
  slot): all 256 must be granted; the cost of contention is latency and conflict retries.
- stress, scarce: capacity 8, all 8 nodes ask for the same 32 slots: exactly 32 can be
  granted, the rest must be refused.

Afterwards the Instances are read back from the API and the invariant checked: held slots <=
capacity, no slot granted to two nodes, every granted slot held by its node. Violations must
be 0. Run: `python bench/bench_agent_contention.py [--quick] [--in-process]`.
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
    AgentProcess,
    Section,
    agent_settings,
    api_server,
    bare_round_trips,
    collect_like_the_agent,
    counting,
    create_configuration,
    finish,
    kubelet_for,
    latencies_ms,
    metric,
    percentile,
    plugin_socket,
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
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client
from akri.sim.kubelet import AdmissionError, Container, Kubelet

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

DEVICES = 4
REALISTIC_P99_S = 0.025
STRESS_P99_S = 0.250
WAIT_S = 30.0
LISTED_WAIT_S = 180.0
"""Agents starting in their own processes on a busy machine take a while to list their
plugins; a bound for a stuck run, not a timing verdict."""
RECLAIM_GRACE_S = 3600
"""Slots Allocated straight to a plugin are unknown to the kubelet: keep them."""
Rows = list[tuple[str, str]]


@dataclass
class Node:
    name: str
    kubelet: Kubelet
    process: AgentProcess | None
    """The agent's own process; None when it runs on this process's event loop."""
    agent: Agent | None = None
    """The agent when it runs on this process's event loop."""


@dataclass
class Outcome:
    node: str
    instance: str
    slot: str
    seconds: float
    code: grpc.StatusCode


@dataclass(frozen=True)
class Counters:
    """Summed over the agents: 409s retried, group-commit batches, CPU seconds of their own
    processes (0 when they run in this one)."""

    conflicts: float
    batches: float
    cpu: float

    def __sub__(self, other: Counters) -> Counters:
        return Counters(
            self.conflicts - other.conflicts, self.batches - other.batches, self.cpu - other.cpu
        )


async def counters(nodes: list[Node]) -> Counters:
    processes = [node.process for node in nodes if node.process is not None]
    if not processes:  # in-process agents count in their own registries
        registries = [node.agent.metrics.registry for node in nodes if node.agent is not None]
        return Counters(
            sum(metric(r, "akri_slot_conflict_retries_total") for r in registries),
            sum(metric(r, "akri_allocate_batches_total") for r in registries),
            0.0,
        )
    stats = await asyncio.gather(*(process.stats() for process in processes))
    return Counters(
        sum(s.conflicts for s in stats), sum(s.batches for s in stats), sum(s.cpu for s in stats)
    )


class Cost:
    """What a scenario cost: wall time, CPU (this process's sampled by component, the agents'
    own processes'), Instance writes and conflicts, and the agents' CPU per Instance change
    each of them follows (its watch event, cache, device lists, ListAndWatch sends)."""

    def __init__(self, server: ApiServer, nodes: list[Node]) -> None:
        self._server = server
        self._nodes = nodes
        self.share = CpuShare()
        self.counters = Counters(0.0, 0.0, 0.0)
        self.cpu = 0.0
        """CPU seconds of this process (the emulators and the client) in the scenario."""
        self.rows: Rows = []

    @contextlib.asynccontextmanager
    async def measuring(self) -> AsyncIterator[Cost]:
        before = await counters(self._nodes)
        started, cpu = time.perf_counter(), time.process_time()
        with counting(self._server, ("update",), "instances") as writes, self.share.sampling():
            yield self
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        self.cpu = cpu
        spent = self.counters = await counters(self._nodes) - before
        own = all(node.process is not None for node in self._nodes)
        agents_cpu = spent.cpu if own else self.share.seconds().get("agent", 0.0)
        changes = writes["update"].hits - spent.conflicts  # a 409 changes nothing
        per_change = agents_cpu / max(changes * len(self._nodes), 1)
        self.rows = [
            ("wall time", f"{wall * 1e3:.0f} ms"),
            *(
                [(f"CPU of the {len(self._nodes)} agents' processes", f"{spent.cpu * 1e3:.0f} ms")]
                if own
                else []
            ),
            (
                "CPU of this process" + (" (emulators and client)" if own else ""),
                f"{cpu * 1e3:.0f} ms",
            ),
            ("  by component", self.share.summary()),
            ("Instance writes / 409 conflicts retried", f"{changes:.0f} / {spent.conflicts:.0f}"),
            ("agent CPU per Instance change, per agent", f"{per_change * 1e3:.2f} ms"),
        ]


@contextlib.asynccontextmanager
async def running_nodes(
    api: client.ApiClient, root: Path, kubeconfig: Path, count: int, in_process: bool
) -> AsyncIterator[list[Node]]:
    async with contextlib.AsyncExitStack() as stack:
        nodes, tasks = [], []
        for i in range(count):
            name = f"node-{i}"
            kubelet = await stack.enter_async_context(kubelet_for(root, name))
            process, agent = None, None
            if in_process:
                settings = agent_settings(root, name, reclaim_grace=RECLAIM_GRACE_S)
                echo = DebugEcho(shared=True, availability_file=None)
                agent = Agent(settings, api_client=api, handlers=[echo])
                tasks.append(asyncio.create_task(agent.run(), name=f"agent {name}"))
            else:
                # Refusals in the scarce scenario are the expected outcome, one warning each.
                process = await AgentProcess.spawn(
                    root, kubeconfig, name, RECLAIM_GRACE=str(RECLAIM_GRACE_S), LOG_LEVEL="ERROR"
                )
                stack.push_async_callback(process.stop)
            nodes.append(Node(name, kubelet, process, agent))
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

    async with asyncio.timeout(LISTED_WAIT_S):
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
    server: ApiServer,
    api: client.ApiClient,
    nodes: list[Node],
    name: str,
    capacity: int,
    requests: int,
    distinct: bool,
) -> Rows:
    instances = await shared_instances(api, nodes, name, capacity)
    channels: list[grpc.aio.Channel] = []
    calls = []
    for n, node in enumerate(nodes):
        stubs: dict[str, DevicePluginAsyncStub] = {}
        for instance in instances:
            socket = plugin_socket(node.kubelet.device_plugins_dir, naming.resource_name(instance))
            channel = grpc.aio.insecure_channel(f"unix://{socket}")
            await channel.channel_ready()
            channels.append(channel)
            stubs[instance] = DevicePluginStub(channel)
        for j in range(requests):
            instance = instances[j % DEVICES]
            index = j // DEVICES + (n * requests // DEVICES if distinct else 0)
            calls.append((stubs[instance], node.name, instance, naming.slot_id(instance, index)))
    cost = Cost(server, nodes)
    try:
        async with cost.measuring():
            outcomes = await asyncio.gather(*(allocate(*call) for call in calls))
    finally:
        for channel in channels:
            await channel.close()
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
        *((f"burst: {name}", value) for name, value in cost.rows),
        (
            "batches decided (group commit), all nodes",
            f"{cost.counters.batches:.0f} for {len(outcomes)} requests",
        ),
        ("invariant violations read back (must be 0)", f"{len(violations)}"),
        ("  invariant holds", verdict(not violations)),
        *((f"  {v}", "") for v in violations[:5]),
    ]


async def shared_instances(
    api: client.ApiClient, nodes: list[Node], name: str, capacity: int
) -> list[str]:
    """A Configuration of `DEVICES` shared Instances, listed by every node's kubelet."""
    descriptions = [f"{name}{i}" for i in range(DEVICES)]
    instances = [naming.instance_name(name, d) for d in descriptions]
    await create_configuration(api, name, descriptions, capacity)
    await until_listed(nodes, instances, capacity)
    return instances


async def realistic(
    server: ApiServer, api: client.ApiClient, nodes: list[Node], pods: int, root: Path
) -> Rows:
    """Each node's kubelet admits its pods one at a time (as a kubelet does), all nodes at
    once, each pod asking for one slot of a shared Instance chosen at random (seeded). Kubelets
    pick the lowest free slot id, so two nodes asking for one Instance before either sees the
    other's grant meet, and one of them is refused, as on a cluster.

    The floor first: the same admissions by one node while the others idle."""
    alone = await shared_instances(api, nodes, "alone", -(-pods // DEVICES))
    floor = await admit_in_turn(nodes[0], alone, min(pods, 50), random.Random(0), "alone")
    bare = await bare_round_trips(root, 100)
    capacity = -(-pods // DEVICES)
    instances = await shared_instances(api, nodes, "real", capacity)
    per_node = [pods // len(nodes) + (n < pods % len(nodes)) for n in range(len(nodes))]
    cost = Cost(server, nodes)
    async with cost.measuring():
        admitted = await asyncio.gather(
            *(
                admit_in_turn(node, instances, count, random.Random(n), "real")
                for n, (node, count) in enumerate(zip(nodes, per_node, strict=True))
            )
        )
    outcomes = [o for found in admitted for o in found]
    granted = [o for o in outcomes if o.code == grpc.StatusCode.OK]
    stored = await read_instances(api)
    violations = invariant_violations(
        {i: stored[i].spec.device_usage for i in instances}, capacity, granted
    )
    seconds = [o.seconds for o in outcomes]
    alone_seconds = [o.seconds for o in floor]
    p50, p99 = percentile(seconds, 50), percentile(seconds, 99)
    floor50, floor99 = percentile(alone_seconds, 50), percentile(alone_seconds, 99)
    return [
        ("pods (nodes x one at a time)", f"{len(outcomes)} ({len(nodes)} x {max(per_node)})"),
        ("capacity per Instance x Instances", f"{capacity} x {DEVICES}"),
        ("admitted / refused", f"{len(granted)} / {len(outcomes) - len(granted)}"),
        ("pod admission (kubelet's Allocate included)", latencies_ms(seconds)),
        (f"  target p99 <= {REALISTIC_P99_S * 1e3:.0f} ms", verdict(p99 <= REALISTIC_P99_S)),
        ("floor: one node admitting, the others idle", latencies_ms(alone_seconds)),
        ("floor: bare grpc.aio round trip (unix socket)", latencies_ms(bare)),
        (
            "pod admission / floor (one node admitting)",
            f"p50 {p50 / floor50:.1f}x, p99 {p99 / floor99:.1f}x",
        ),
        *cost.rows,
        (
            "CPU of the agents' processes / of this process, per pod",
            f"{cost.counters.cpu / len(outcomes) * 1e3:.2f} ms / "
            f"{cost.cpu / len(outcomes) * 1e3:.2f} ms",
        ),
        ("invariant violations read back (must be 0)", f"{len(violations)}"),
        ("  invariant holds", verdict(not violations)),
        *((f"  {v}", "") for v in violations[:5]),
    ]


async def admit_in_turn(
    node: Node, instances: list[str], count: int, rng: random.Random, prefix: str
) -> list[Outcome]:
    outcomes = []
    for i in range(count):
        instance = rng.choice(instances)
        resource = naming.resource_name(instance)
        started = time.perf_counter()
        code, slot = grpc.StatusCode.OK, ""
        try:
            pod = await node.kubelet.admit(
                f"{node.name}-{prefix}-{i}",
                f"{prefix}-{i}",
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


async def bench(nodes: int, requests: int, pods: int, in_process: bool) -> tuple[Rows, Rows, Rows]:
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with (
            api_server(root) as (server, kubeconfig),
            await load_client(kubeconfig) as api,
            running_nodes(api, root, kubeconfig, nodes, in_process) as running,
        ):
            real = await realistic(server, api, running, pods, root)
            ample = await scenario(
                server, api, running, "ample", nodes * requests // DEVICES, requests, True
            )
            scarce = await scenario(
                server, api, running, "scarce", requests // DEVICES, requests, False
            )
    return real, ample, scarce


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="4 nodes x 16 requests")
    parser.add_argument("--nodes", type=int, default=None)
    parser.add_argument("--requests", type=int, default=None, help="per node, multiple of 4")
    parser.add_argument("--pods", type=int, default=None, help="realistic case, all nodes")
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the agents on this process's event loop instead of in their own processes",
    )
    args = parser.parse_args()
    nodes = args.nodes or (4 if args.quick else 8)
    requests = args.requests or (16 if args.quick else 32)
    pods = args.pods or (50 if args.quick else 200)
    quiet_logs()
    # Refusals in the scarce scenario are the expected outcome, one warning each.
    logging.getLogger("akri.agent.plugins.servicer").setLevel(logging.ERROR)
    raise_open_files(65536)
    collect_like_the_agent()
    began, load = time.monotonic(), os.getloadavg()[0]
    real, ample, scarce = asyncio.run(bench(nodes, requests, pods, args.in_process))
    where = "all in one process" if args.in_process else "agents in their own processes"
    finish(
        [
            Section(
                f"3. kubelet-realistic Allocate ({nodes} nodes, one pod at a time each; {where})",
                real,
                "realistic: ",
            ),
            Section(
                f"3a. contended Allocate, ample capacity ({nodes} nodes; {where})",
                ample,
                "stress, ample capacity: ",
            ),
            Section(
                f"3b. contended Allocate, scarce capacity ({nodes} nodes; {where})",
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
