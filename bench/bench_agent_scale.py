"""Agent scale benchmark: 1000 Instances on one node, then the steady state.

The agent is the real `akri-agent` program in its own process, so its RSS and CPU are its
own; the API emulator and the kubelet emulator run in this process and talk to it over a
unix socket (kubelet) and 127.0.0.1 (API), and collect garbage at the agent's threshold.
One debugEcho Configuration discovers N devices.

4. Time from spawning the agent until the kubelet emulator has all N instance-level plugins
   and the configuration-level plugin registered and listing their devices; the agent's RSS
   (and what importing the agent alone costs); then its idle CPU, and after the steady state
   the time until every plugin is registered again after a kubelet restart, and the agent's
   RSS once it settled from that (a thousand servers replaced).
5. With nothing changing (after a few pods took slots through the kubelet emulator), API
   writes (counted by the emulator) and ListAndWatch sends (the agent's
   akri_list_and_watch_sends) over a window, scaled to per minute. Must be 0.

Every number is taken over `--runs` runs (each a new API emulator, kubelet and agent) and shown
as median (min - max), with the machine's 1-minute load average before and after each run and
the CPU the agent and this process (the emulators) spent, so a number that moves with the load
can be told from one that moves with the code.

Run: `python bench/bench_agent_scale.py [--quick] [--runs N] [--instances N] [--steady-seconds S]
[--profile DIR]`. `--profile` records where the CPU goes during each kubelet restart: the agent's
process with py-spy (`pip install py-spy`; collapsed stacks by thread in
`DIR/agent-restart-<run>.txt`, each thread's CPU seconds in `DIR/agent-restart-<run>-threads.txt`)
and this process's emulators with cProfile (`DIR/emulators-restart-<run>.prof`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import itertools
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from _common import (
    OPEN_FILES,
    VERBS,
    WRITES,
    AgentProcess,
    Section,
    Stats,
    api_server,
    collect_like_the_agent,
    counting,
    cpu_seconds,
    create_configuration,
    finish,
    follow_creates,
    hits,
    import_cost,
    kubelet_for,
    loads,
    median,
    quiet_grpc,
    quiet_logs,
    raise_open_files,
    spread,
    thread_cpu,
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
RESTART_TARGET_S = 3.0
PODS = 10
CAPACITY = 2
Rows = list[tuple[str, str]]


class Listed:
    """Whether the kubelet has every plugin registered and listing all its devices.

    Called on every kubelet change (thousands while a thousand plugins start): resources found
    ready are not looked at again, and the configuration-level one (a thousand devices) only
    once every instance-level one is, so the benchmark's own waiting stays O(1) per change
    instead of competing with the agent for CPU."""

    def __init__(self, kubelet: Kubelet, names: list[str], capacity: int) -> None:
        self._kubelet = kubelet
        self._pending = {naming.resource_name(name): capacity for name in names}
        self._configuration = (naming.resource_name(CONFIGURATION), len(names))

    def _ready(self, resource: str, healthy: int) -> bool:
        status = self._kubelet.resource(resource)
        return status is not None and status.registered and len(status.healthy_ids) == healthy

    def __call__(self) -> bool:
        for resource, healthy in list(self._pending.items()):
            if not self._ready(resource, healthy):
                return False
            del self._pending[resource]
        return self._ready(*self._configuration)


_profiles = itertools.count(1)


@contextlib.asynccontextmanager
async def profiled(pid: int, directory: Path | None) -> AsyncIterator[None]:
    """With a directory: the agent sampled by py-spy (and its threads' CPU taken) and this
    process profiled while the body runs (numbered files, one set per call)."""
    if directory is None:
        yield
        return
    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.defpath}")
    if spy is None:
        raise RuntimeError("--profile needs py-spy (pip install py-spy)")
    number = next(_profiles)
    output = directory / f"agent-restart-{number}.txt"
    recorder = await asyncio.create_subprocess_exec(
        *(spy, "record", "--pid", str(pid), "--rate", "250", "--format", "raw", "--threads"),
        *("--output", str(output)),
        stdout=asyncio.subprocess.PIPE,
    )
    assert recorder.stdout is not None
    await recorder.stdout.readline()  # "py-spy> Sampling process ...": attached
    threads = thread_cpu(pid)
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(directory / f"emulators-restart-{number}.prof")
        spent = {thread: cpu - threads.get(thread, 0.0) for thread, cpu in thread_cpu(pid).items()}
        lines = [f"{cpu:.2f} s {tid} {name}" for (tid, name), cpu in spent.items()]
        (directory / f"agent-restart-{number}-threads.txt").write_text("\n".join(lines) + "\n")
        recorder.send_signal(signal.SIGINT)
        await recorder.communicate()


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
                await kubelet.wait_for(Listed(kubelet, names, capacity))
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

    listed = Listed(kubelet, names, CAPACITY)

    def again() -> bool:
        registered = kubelet.registrations
        return listed() and all(registered.get(r, 0) > before.get(r, 0) for r in resources)

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


@dataclass
class Run:
    """What one run measured (seconds, MB, CPU seconds; loads are 1-minute averages)."""

    created: float
    registered: float
    restart: float
    rss_mb: float
    peak_mb: float
    idle_cpu: float
    startup_agent_cpu: float
    startup_emulator_cpu: float
    restart_agent_cpu: float
    restart_emulator_cpu: float
    restarted_rss_mb: float
    sends: float
    load: tuple[float, float]
    steady: Rows


async def bench(instances: int, steady_s: float, profile: Path | None) -> Run:
    capacity = CAPACITY
    descriptions, names = distinct_devices(instances)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with api_server(root) as (server, kubeconfig):
            async with await load_client(kubeconfig) as api:
                await create_configuration(api, CONFIGURATION, descriptions, capacity)
            async with kubelet_for(root, NODE) as kubelet:
                here = time.process_time()
                agent, created, from_spawn = await startup(
                    server, kubelet, root, kubeconfig, names, capacity
                )
                startup_cpu = (cpu_seconds(agent.pid), time.process_time() - here)
                try:
                    return await measure(
                        server,
                        kubelet,
                        agent,
                        names,
                        steady_s,
                        (created, from_spawn),
                        startup_cpu,
                        load_before,
                        profile,
                    )
                finally:
                    await agent.stop()


async def measure(
    server: ApiServer,
    kubelet: Kubelet,
    agent: AgentProcess,
    names: list[str],
    steady_s: float,
    startup_s: tuple[float, float],
    startup_cpu: tuple[float, float],
    load_before: float,
    profile: Path | None,
) -> Run:
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
    agent_cpu, here = cpu_seconds(agent.pid), time.process_time()
    async with profiled(agent.pid, profile):
        restart_s = await kubelet_restart(kubelet, names)
    restart_cpu = (cpu_seconds(agent.pid) - agent_cpu, time.process_time() - here)
    await asyncio.sleep(2.0)  # the previous incarnations' servers stop in the background
    restarted = await agent.stats()
    sends_in_window = total_sends(after) - total_sends(settled)
    per_minute = 60.0 / wall
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
    return Run(
        created=startup_s[0],
        registered=startup_s[1],
        restart=restart_s,
        rss_mb=mb(after.rss["VmRSS"]),
        peak_mb=mb(after.rss["VmHWM"]),
        idle_cpu=cpu / wall,
        startup_agent_cpu=startup_cpu[0],
        startup_emulator_cpu=startup_cpu[1],
        restart_agent_cpu=restart_cpu[0],
        restart_emulator_cpu=restart_cpu[1],
        restarted_rss_mb=mb(restarted.rss["VmRSS"]),
        sends=total_sends(startup_stats),
        load=(load_before, os.getloadavg()[0]),
        steady=steady,
    )


def scale_rows(runs: list[Run], instances: int) -> Rows:
    imports_mb, imports_s = import_cost("akri.agent.main")

    def of(field: str) -> list[float]:
        return [getattr(run, field) for run in runs]

    registered, rss = median(of("registered")), median(of("rss_mb"))
    return [
        ("runs; 1-min load average before / after each", loads([r.load for r in runs])),
        ("Instances (IL plugins) + CL plugin", f"{instances} + 1"),
        ("spawn -> all Instances created in the API", spread(of("created"), "s")),
        ("spawn -> all plugins registered and listed", spread(of("registered"), "s")),
        (f"  target <= {START_TARGET_S:.0f} s (median)", verdict(registered <= START_TARGET_S)),
        ("  agent CPU / emulators' CPU (this process)", cpu_pair(runs, "startup")),
        ("  importing the agent (alone)", f"{imports_s:.2f} s"),
        ("ListAndWatch sends during startup", spread(of("sends"), "", 0)),
        ("agent RSS after settling, kubelet streams open", spread(of("rss_mb"), "MB", 1)),
        (f"  target <= {RSS_TARGET_MB:.0f} MB (median)", verdict(rss <= RSS_TARGET_MB)),
        ("  peak", spread(of("peak_mb"), "MB", 1)),
        ("  importing the agent (alone)", f"{imports_mb:.1f} MB"),
        ("idle CPU, % of one core", spread([c * 100 for c in of("idle_cpu")], "%")),
        ("kubelet restart -> every plugin registered again", spread(of("restart"), "s")),
        (
            f"  target <= {RESTART_TARGET_S:.0f} s (median)",
            verdict(median(of("restart")) <= RESTART_TARGET_S),
        ),
        ("  agent CPU / emulators' CPU (this process)", cpu_pair(runs, "restart")),
        ("  agent RSS after it, kubelet streams open", spread(of("restarted_rss_mb"), "MB", 1)),
    ]


def cpu_pair(runs: list[Run], phase: str) -> str:
    agent = [getattr(r, f"{phase}_agent_cpu") for r in runs]
    emulators = [getattr(r, f"{phase}_emulator_cpu") for r in runs]
    return f"{spread(agent, 's')} / {spread(emulators, 's')}"


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 Instances, 10 s window")
    parser.add_argument("--instances", type=int, default=None)
    parser.add_argument("--steady-seconds", type=float, default=None)
    parser.add_argument("--runs", type=int, default=3, help="runs, each with a new agent")
    parser.add_argument(
        "--profile", type=Path, help="profile each kubelet restart into this directory"
    )
    args = parser.parse_args()
    instances = args.instances or (200 if args.quick else 1000)
    steady_s = args.steady_seconds or 10.0
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    quiet_logs()
    raise_open_files(OPEN_FILES)
    collect_like_the_agent()
    began, load = time.monotonic(), os.getloadavg()[0]
    runs = [asyncio.run(bench(instances, steady_s, args.profile)) for _ in range(args.runs)]
    scale = scale_rows(runs, instances)
    steady = runs[-1].steady
    finish(
        [
            Section(f"4. {instances} Instances on one node (agent in its own process)", scale),
            Section("5. steady state, nothing changing (last run)", steady, "steady state: "),
        ],
        began,
        load,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
