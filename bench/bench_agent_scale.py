"""Agent scale benchmark: 1000 Instances on one node, then the steady state.

The agent is the real `akri-agent` program in its own process, so its RSS and CPU are its
own; the API emulator and the kubelet emulator run in this process and talk to it over a
unix socket (kubelet) and 127.0.0.1 (API). One debugEcho Configuration discovers N devices.

4. Time from spawning the agent until the kubelet emulator has all N instance-level plugins
   and the configuration-level plugin registered and listing their devices; the agent's RSS
   (and what importing the agent alone costs); then its idle CPU, and after the steady state
   the time until every plugin is registered again after a kubelet restart.
5. With nothing changing (after a few pods took slots through the kubelet emulator), API
   writes (counted by the emulator) and ListAndWatch sends (the agent's
   akri_list_and_watch_sends) over a window, scaled to per minute. Must be 0.

Run: `python bench/bench_agent_scale.py [--quick] [--instances N] [--steady-seconds S]`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    OPEN_FILES,
    VERBS,
    WRITES,
    AgentProcess,
    Stats,
    api_server,
    counting,
    cpu_seconds,
    create_configuration,
    follow_creates,
    hits,
    import_cost,
    kubelet_for,
    quiet_grpc,
    quiet_logs,
    raise_open_files,
    summary,
    table,
    verdict,
)

from akri import naming
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client
from akri.sim.kubelet import Container, Kubelet

NODE = "node-0"
CONFIGURATION = "scale"
START_TARGET_S = 10.0
RSS_TARGET_MB = 150.0
PODS = 10
CAPACITY = 2
Rows = list[tuple[str, str]]


def all_listed(kubelet: Kubelet, names: list[str], capacity: int) -> bool:
    resources = kubelet.resources()
    for name in names:
        status = resources.get(naming.resource_name(name))
        if status is None or not status.registered or len(status.healthy_ids) != capacity:
            return False
    status = resources.get(naming.resource_name(CONFIGURATION))
    return status is not None and status.registered and len(status.healthy_ids) == len(names)


def total_sends(stats: Stats) -> float:
    return sum(stats.sends.values())


def mb(kb: int) -> float:
    return kb / 1024


async def startup(
    server: ApiServer,
    kubelet: Kubelet,
    root: Path,
    kubeconfig: Path,
    names: list[str],
    capacity: int,
) -> tuple[AgentProcess, float, float]:
    """The agent spawned; seconds until all Instances exist, and until all plugins list."""
    spawned = time.monotonic()
    with counting(server, ("create",), "instances") as requests:
        agent = await AgentProcess.spawn(root, kubeconfig, NODE)
        written = asyncio.create_task(follow_creates(server, requests["create"], len(names)))
        try:
            async with asyncio.timeout(120):
                await kubelet.wait_for(lambda: all_listed(kubelet, names, capacity))
                _, created, _ = await written
        except TimeoutError:
            await agent.stop()
            raise RuntimeError("the plugins were not all registered within 120 s") from None
        finally:
            written.cancel()
    return agent, created - spawned, time.monotonic() - spawned


async def kubelet_restart(kubelet: Kubelet, names: list[str]) -> float:
    """Seconds from a kubelet restart (plugin sockets deleted) until every plugin has
    registered again and lists its devices."""
    resources = [naming.resource_name(n) for n in [*names, CONFIGURATION]]
    before = dict(kubelet.registrations)
    began = time.monotonic()
    await kubelet.restart()

    def again() -> bool:
        registered = kubelet.registrations
        return all(registered.get(r, 0) > before.get(r, 0) for r in resources) and all_listed(
            kubelet, names, CAPACITY
        )

    async with asyncio.timeout(120):
        await kubelet.wait_for(again)
    return time.monotonic() - began


async def admit_pods(kubelet: Kubelet, names: list[str]) -> int:
    admitted = 0
    for i, name in enumerate(names[:PODS]):
        container = Container("c", {naming.resource_name(name): 1})
        await kubelet.admit(f"pod-{i}", f"pod-{i}", "default", containers=[container])
        admitted += 1
    return admitted


def distinct_devices(count: int) -> tuple[list[str], list[str]]:
    """`count` descriptions whose Instance names differ. Names carry a 6-hex-digit digest of
    the device id (as in Akri), so 1000 devices collide with a chance of about 3 %
    (dev0..dev999 do: the agent would publish only one of the two)."""
    descriptions: list[str] = []
    names: dict[str, str] = {}
    i = 0
    while len(descriptions) < count:
        name = naming.instance_name(CONFIGURATION, f"dev{i}")
        if name not in names:
            names[name] = f"dev{i}"
            descriptions.append(f"dev{i}")
        i += 1
    return descriptions, list(names)


async def bench(instances: int, steady_s: float) -> tuple[Rows, Rows]:
    capacity = CAPACITY
    descriptions, names = distinct_devices(instances)
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with api_server(root) as (server, kubeconfig):
            async with await load_client(kubeconfig) as api:
                await create_configuration(api, CONFIGURATION, descriptions, capacity)
            async with kubelet_for(root, NODE) as kubelet:
                agent, created, from_spawn = await startup(
                    server, kubelet, root, kubeconfig, names, capacity
                )
                try:
                    scale, steady = await measure(
                        server, kubelet, agent, names, steady_s, created, from_spawn
                    )
                finally:
                    await agent.stop()
    return scale, steady


async def measure(
    server: ApiServer,
    kubelet: Kubelet,
    agent: AgentProcess,
    names: list[str],
    steady_s: float,
    created: float,
    from_spawn: float,
) -> tuple[Rows, Rows]:
    imports_mb, imports_s = import_cost("akri.agent.main")
    startup_stats = await agent.stats()
    await asyncio.sleep(2.0)  # trailing status writes (Configuration conditions) land
    admitted = await admit_pods(kubelet, names)
    await asyncio.sleep(2.0)
    settled = await agent.stats()
    with counting(server, VERBS) as requests:
        cpu_before, wall_before = cpu_seconds(agent.pid), time.monotonic()
        version = kubelet.version
        await asyncio.sleep(steady_s)
        cpu = cpu_seconds(agent.pid) - cpu_before
        wall = time.monotonic() - wall_before
        writes = hits(requests, WRITES)
        reads = hits(requests, ("get", "list", "watch"))
        kubelet_changes = kubelet.version - version
    after = await agent.stats()
    restart_s = await kubelet_restart(kubelet, names)
    rss = after.rss
    sends_in_window = total_sends(after) - total_sends(settled)
    per_minute = 60.0 / wall
    scale: Rows = [
        ("Instances (IL plugins) + CL plugin", f"{len(names)} + 1"),
        ("spawn -> all Instances created in the API", f"{created:.2f} s"),
        ("spawn -> all plugins registered and listed", f"{from_spawn:.2f} s"),
        ("  of which importing the agent (alone)", f"{imports_s:.2f} s"),
        (f"  target <= {START_TARGET_S:.0f} s (from spawn)", verdict(from_spawn <= START_TARGET_S)),
        ("ListAndWatch sends during startup", f"{total_sends(startup_stats):.0f}"),
        ("agent RSS after settling", f"{mb(rss['VmRSS']):.1f} MB (peak {mb(rss['VmHWM']):.1f} MB)"),
        ("  of which importing the agent (alone)", f"{imports_mb:.1f} MB"),
        (f"  target <= {RSS_TARGET_MB:.0f} MB", verdict(mb(rss["VmRSS"]) <= RSS_TARGET_MB)),
        (f"idle CPU over {wall:.0f} s", f"{cpu / wall * 100:.2f} % of one core ({cpu:.2f} s)"),
        ("kubelet restart -> every plugin registered again", f"{restart_s:.2f} s"),
    ]
    steady: Rows = [
        (f"window ({len(names)} Instances, {admitted} pods holding slots)", f"{wall:.1f} s"),
        ("API writes per minute (must be 0)", f"{writes * per_minute:.1f} ({writes} in window)"),
        ("API reads per minute (get/list/watch)", f"{reads * per_minute:.1f}"),
        (
            "ListAndWatch sends per minute (must be 0)",
            f"{sends_in_window * per_minute:.1f} ({sends_in_window:.0f} in window)",
        ),
        ("kubelet-visible changes in window", str(kubelet_changes)),
        ("  steady state costs nothing", verdict(writes == 0 and sends_in_window == 0)),
    ]
    return scale, steady


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 Instances, 10 s window")
    parser.add_argument("--instances", type=int, default=None)
    parser.add_argument("--steady-seconds", type=float, default=None)
    args = parser.parse_args()
    instances = args.instances or (200 if args.quick else 1000)
    steady_s = args.steady_seconds or (10.0 if args.quick else 25.0)
    quiet_logs()
    raise_open_files(OPEN_FILES)
    began = time.monotonic()
    scale, steady = asyncio.run(bench(instances, steady_s))
    print(table(scale, f"4. {instances} Instances on one node (agent in its own process)"))
    print()
    print(table(steady, "5. steady state, nothing changing"))
    print()
    print(summary(scale, steady))
    print(f"\n(ran {time.monotonic() - began:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
