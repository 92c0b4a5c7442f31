"""Per-change cost: one agent following Instance changes another node writes, and its kubelet.

On a busy cluster most Instance changes an agent sees are slots taken and released by other
nodes; each one makes the Instance's instance-level ListAndWatch send a new list to the kubelet
on every node (docs/design.md §5.2). This measures that cost alone: one real `akri-agent` in its
own process, its kubelet emulator in another, and in this process the API emulator and a writer
that takes and releases slots of 4 shared Instances for another node, one change at a time at a
steady pace. Each round ends when the kubelet lists what the last change left, and gives the
CPU of the agent's process per change and of the kubelet's process per ListAndWatch message it
received (from /proc schedstat, every thread); the agent's sends are counted too (one per
change: nothing is coalesced).

CPU time per unit of work moves by 10-30 % between runs on a shared machine. To compare two
versions of the code, `--baseline DIR` runs a second agent and kubelet on the code of another
checkout at the same time, following the same changes, and gives the ratio per round: both
meet the same load. Two runs of the same code give ratios of 0.95-1.07 (median of 12 rounds).

Run: `python bench/bench_instance_change.py [--rounds N] [--slots N] [--interval S]
[--baseline DIR]`. Internally `--kubelet ROOT NODE` runs the kubelet emulator process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import (
    NAMESPACE,
    AgentProcess,
    Section,
    api_server,
    collect_like_the_agent,
    create_configuration,
    finish,
    kubelet_for,
    quiet_grpc,
    quiet_logs,
    spread,
)
from kubernetes_asyncio import client

from akri import naming
from akri.sim.cluster import load_client

DEVICES = 4
CAPACITY = 50
OTHER_NODE = "node-elsewhere"
FIRST_NODE = "a-node-without-agent"
"""Put first in every Instance's nodes: the agent of the first (lowest) node name writes an
Instance's properties and reports its slot problems, so two agents compared would not do the
same work for each change."""
WAIT_S = 180.0
"""Bound for a stuck run (an agent starting on a busy machine is slow), not a verdict."""


async def kubelet_process(root: Path, node: str) -> None:
    """The kubelet emulator of `node`; on each stdin line `{"resource": healthy, ...}` it
    answers `ok` once every named resource lists that many healthy devices."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    async with kubelet_for(root, node) as kubelet:
        print("ready", flush=True)
        while line := await reader.readline():
            wanted: dict[str, int] = json.loads(line)

            def reached(wanted: dict[str, int] = wanted) -> bool:
                statuses = kubelet.resources()
                return all(
                    (status := statuses.get(resource)) is not None
                    and len(status.healthy_ids) == healthy
                    for resource, healthy in wanted.items()
                )

            await kubelet.wait_for(reached)
            print("ok", flush=True)


def run_time(pid: int) -> float:
    """CPU seconds of every thread of a process, to the nanosecond (schedstat), where the
    clock-tick counts of /proc/PID/stat would round a round's few hundred ms to 10 ms."""
    return (
        sum(
            int((task / "schedstat").read_text().split()[0])
            for task in Path(f"/proc/{pid}/task").iterdir()
        )
        / 1e9
    )


class KubeletProcess:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    @classmethod
    async def spawn(cls, root: Path, node: str, env: dict[str, str]) -> KubeletProcess:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--kubelet",
            str(root),
            node,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, **env},
        )
        started = cls(process)
        await started._line("ready")
        return started

    async def _line(self, expected: str) -> None:
        assert self.process.stdout is not None
        async with asyncio.timeout(WAIT_S):
            line = (await self.process.stdout.readline()).decode().strip()
        if line != expected:
            raise RuntimeError(f"kubelet process said {line!r}, expected {expected!r}")

    async def until_healthy(self, wanted: dict[str, int]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(wanted).encode() + b"\n")
        await self._line("ok")

    @property
    def cpu(self) -> float:
        return run_time(self.process.pid)

    async def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()


class Writer:
    """Takes and releases slots for another node, one replace at a time, from the object the
    previous write stored (it is the only writer once the agent is idle)."""

    def __init__(self, api: client.ApiClient, instances: list[str]) -> None:
        self._custom = client.CustomObjectsApi(api)
        self.instances = instances
        self._stored: dict[str, dict[str, Any]] = {}

    async def load(self) -> None:
        """Read the Instances, and add `FIRST_NODE` to their nodes."""
        for name in self.instances:
            self._stored[name] = body = await self._custom.get_namespaced_custom_object(
                naming.GROUP, naming.VERSION, NAMESPACE, "instances", name
            )
            body["spec"]["nodes"] = sorted({*body["spec"].get("nodes", []), FIRST_NODE})
            self._stored[name] = await self._custom.replace_namespaced_custom_object(
                naming.GROUP, naming.VERSION, NAMESPACE, "instances", name, body
            )

    async def set(self, instance: str, slot: int, holder: str) -> None:
        body = self._stored[instance]
        body["spec"].setdefault("deviceUsage", {})[naming.slot_id(instance, slot)] = holder
        self._stored[instance] = await self._custom.replace_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", instance, body
        )


async def a_round(
    writer: Writer,
    slots: int,
    holder: str,
    interval: float,
    followers: list[Follower],
    resources: list[str],
    left: int,
) -> None:
    """Set `slots` slots of every Instance to `holder`, one write every `interval` seconds,
    until every kubelet lists `left` healthy slots of each; notes what it cost each follower."""
    started = []
    for follower in followers:
        assert follower.agent is not None
        sent = (await follower.agent.stats()).sends["instance"]
        started.append((sent, run_time(follower.agent.pid), follower.kubelet.cpu))
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    changes = 0
    for slot in range(slots):
        for instance in writer.instances:
            await writer.set(instance, slot, holder)
            changes += 1
            next_at += interval
            await asyncio.sleep(max(0.0, next_at - loop.time()))  # pacing, not synchronisation
    for follower in followers:
        await follower.kubelet.until_healthy(dict.fromkeys(resources, left))
    spent = [
        (run_time(f.agent.pid) - agent_cpu, f.kubelet.cpu - kubelet_cpu)
        for f, (_, agent_cpu, kubelet_cpu) in zip(followers, started, strict=True)
        if f.agent is not None
    ]
    # A scrape costs the agent CPU: taken after the CPU is read, not counted.
    for follower, (sent, _, _), (agent_cpu, kubelet_cpu) in zip(
        followers, started, spent, strict=True
    ):
        assert follower.agent is not None
        sent = (await follower.agent.stats()).sends["instance"] - sent
        follower.agent_ms.append(agent_cpu / changes * 1e3)
        follower.kubelet_ms.append(kubelet_cpu / max(sent, 1) * 1e3)
        follower.sends.append(sent / changes)


@dataclass
class Follower:
    """One node following the changes: its agent and its kubelet, each in its own process."""

    label: str
    kubelet: KubeletProcess
    agent: AgentProcess | None = None
    agent_ms: list[float] = field(default_factory=list)
    kubelet_ms: list[float] = field(default_factory=list)
    sends: list[float] = field(default_factory=list)


def source_roots(tree: Path) -> dict[str, str]:
    """The environment that runs a process on the code of another checkout `tree`."""
    roots = [tree / root for root in ("core", "sim", "agent", "controller", "discovery-handlers")]
    return {"PYTHONPATH": os.pathsep.join(map(str, roots))}


async def bench(
    rounds: int, slots: int, interval: float, baseline: Path | None
) -> list[tuple[str, str]]:
    trees = {
        "this tree": {},
        **({f"baseline {baseline}": source_roots(baseline)} if baseline else {}),
    }
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with api_server(root) as (_, kubeconfig), await load_client(kubeconfig) as api:
            followers: list[Follower] = []
            try:
                for n, (label, env) in enumerate(trees.items()):
                    node = f"node-{n}"
                    followers.append(Follower(label, await KubeletProcess.spawn(root, node, env)))
                    followers[-1].agent = await AgentProcess.spawn(
                        root, kubeconfig, node, RECLAIM_GRACE="3600", LOG_LEVEL="ERROR", **env
                    )
                descriptions = [f"chg{i}" for i in range(DEVICES)]
                instances = [naming.instance_name("chg", d) for d in descriptions]
                await create_configuration(api, "chg", descriptions, CAPACITY)
                resources = [naming.resource_name(i) for i in instances]
                for follower in followers:
                    await follower.kubelet.until_healthy(dict.fromkeys(resources, CAPACITY))
                writer = Writer(api, instances)
                await writer.load()
                for n in range(rounds):
                    taking = n % 2 == 0
                    holder = OTHER_NODE if taking else ""
                    left = CAPACITY - slots if taking else CAPACITY
                    await a_round(writer, slots, holder, interval, followers, resources, left)
            finally:
                for follower in followers:
                    if follower.agent is not None:
                        await follower.agent.stop()
                    await follower.kubelet.stop()
    rows = [
        (
            "changes per round (4 Instances)",
            f"{slots * DEVICES} x {rounds} rounds, one every {interval * 1e3:g} ms",
        )
    ]
    for follower in followers:
        prefix = f"{follower.label}: " if baseline else ""
        rows += [
            (f"{prefix}agent CPU per Instance change", spread(follower.agent_ms, "ms", 3)),
            (
                f"{prefix}kubelet emulator CPU per ListAndWatch message",
                spread(follower.kubelet_ms, "ms", 3),
            ),
            (
                f"{prefix}instance-level sends per change (1: none coalesced)",
                spread(follower.sends, "", 2),
            ),
        ]
    if baseline:
        mine, base = followers
        for what, ours, theirs in (
            ("agent", mine.agent_ms, base.agent_ms),
            ("kubelet", mine.kubelet_ms, base.kubelet_ms),
        ):
            ratios = [a / b for a, b in zip(ours, theirs, strict=True)]
            rows.append((f"{what} CPU, this tree / baseline, per round", spread(ratios, "", 3)))
    return rows


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--slots", type=int, default=40, help="slots set per Instance a round")
    parser.add_argument("--interval", type=float, default=0.006, help="seconds between writes")
    parser.add_argument(
        "--baseline",
        type=Path,
        help="a checkout of another version (e.g. `git worktree add /tmp/base main`): a second "
        "agent and kubelet run its code, following the same changes at the same time",
    )
    parser.add_argument("--kubelet", nargs=2, metavar=("ROOT", "NODE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    quiet_logs()
    collect_like_the_agent()
    if args.kubelet:
        asyncio.run(kubelet_process(Path(args.kubelet[0]), args.kubelet[1]))
        return 0
    began, load = time.monotonic(), os.getloadavg()[0]
    rows = asyncio.run(bench(args.rounds, args.slots, args.interval, args.baseline))
    finish(
        [Section("Instance change followed by one agent and its kubelet", rows, "change: ")],
        began,
        load,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
