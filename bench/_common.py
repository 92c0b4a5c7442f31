"""What the benchmarks share: request counting on the API emulator, percentiles, the table.

Not a benchmark itself; each `bench_*.py` imports it (they run as scripts, so `bench/` is on
sys.path). Numbers are printed, never judged: a target is shown next to the number it concerns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import resource
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client
from prometheus_client import REGISTRY

from akri import naming
from akri.agent.agent import Agent
from akri.agent.settings import AgentSettings
from akri.api import Instance, crd_definitions
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.sim.kubelet import Kubelet

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete")
WRITES = ("create", "update", "patch", "delete")


@contextlib.contextmanager
def counting(
    server: ApiServer, verbs: Iterable[str] = VERBS, resource: str | None = None
) -> Iterator[dict[str, FaultRule]]:
    """Rules without a status change nothing; their hit counts are the requests by verb."""
    rules = {verb: server.faults.add(FaultRule(verb=verb, resource=resource)) for verb in verbs}
    try:
        yield rules
    finally:
        for rule in rules.values():
            server.faults.remove(rule.id)


def hits(rules: dict[str, FaultRule], verbs: Iterable[str] = WRITES) -> int:
    return sum(rules[verb].hits for verb in verbs if verb in rules)


def reset(rules: dict[str, FaultRule]) -> None:
    for rule in rules.values():
        rule.hits = 0


def percentile(samples: Sequence[float], q: float) -> float:
    """The nearest-rank percentile `q` (0-100) of `samples`; NaN when there are none."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def latencies_ms(samples: Sequence[float]) -> str:
    """`p50 / p99 / max` of samples in seconds, shown in milliseconds."""
    p50, p99 = percentile(samples, 50), percentile(samples, 99)
    top = max(samples) if samples else math.nan
    return (
        f"p50 {p50 * 1e3:.2f} ms, p99 {p99 * 1e3:.2f} ms, max {top * 1e3:.2f} ms (n={len(samples)})"
    )


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def summary(*tables: Sequence[tuple[str, Any]]) -> str:
    """One line: how many of the rows judged by `verdict` were met, naming those that were not."""
    judged = [
        (name.strip(), value)
        for rows in tables
        for name, value in rows
        if str(value).startswith(("met", "NOT met"))
    ]
    missed = [name for name, value in judged if str(value).startswith("NOT")]
    line = f"summary: {len(judged) - len(missed)} of {len(judged)} targets met"
    return line + (f"; not met: {'; '.join(missed)}" if missed else "")


def table(rows: Sequence[tuple[str, Any]], title: str | None = None) -> str:
    width = max(len(name) for name, _ in rows)
    lines = [f"{name:<{width}}  {value}" for name, value in rows]
    if title is not None:
        rule = "-" * max(len(title), *(len(line) for line in lines))
        lines = [title, rule, *lines]
    return "\n".join(lines)


def raise_open_files(wanted: int) -> int:
    """Raise the soft RLIMIT_NOFILE towards `wanted` (capped by the hard limit); the new value."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def quiet_logs() -> None:
    """Warnings only; the emulators log every watch and stream cut at shutdown as errors."""
    logging.basicConfig(level=logging.WARNING)
    logging.getLogger("akri.sim").setLevel(logging.CRITICAL)
    # aiohttp logs the emulator's watch streams that clients cut at shutdown, too.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)


def quiet_grpc() -> None:
    """gRPC core logs every GOAWAY of a stopped plugin server at INFO. Its verbosity is read
    when grpc is imported, which has happened by now: run the script again with it set."""
    if "GRPC_VERBOSITY" not in os.environ:
        os.environ["GRPC_VERBOSITY"] = "ERROR"
        os.execv(sys.executable, [sys.executable, *sys.argv])


NAMESPACE = "default"
OPEN_FILES = 65536


@contextlib.asynccontextmanager
async def api_server(workdir: Path) -> AsyncIterator[tuple[ApiServer, Path]]:
    """The API emulator with the project's CRDs, and a kubeconfig for it."""
    async with ApiServer() as server:
        await server.apply_definitions(crd_definitions())
        yield server, server.write_kubeconfig(workdir / "kubeconfig")


def agent_settings(root: Path, node: str, **options: Any) -> AgentSettings:
    """Settings of an in-process agent for `node`: its own short socket dirs, no metrics port."""
    directory = root / node
    defaults: dict[str, Any] = {
        "device_plugins_dir": directory / "dp",
        "pod_resources_socket": directory / "pr" / "kubelet.sock",
        "discovery_handlers_directory": directory,
        "metrics_port": 0,
    }
    return AgentSettings(agent_node_name=node, **(defaults | options))


def kubelet_for(root: Path, node: str) -> Kubelet:
    """The kubelet emulator matching `agent_settings(root, node)`."""
    return Kubelet(node, root / node / "dp", root / node / "pr", call_timeout=30.0)


async def create_configuration(
    api: client.ApiClient, name: str, descriptions: Sequence[str], capacity: int
) -> None:
    """A debugEcho Configuration discovering one device per description."""
    body = {
        "apiVersion": naming.API_VERSION,
        "kind": "Configuration",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "discoveryHandler": {
                "name": "debugEcho",
                "discoveryDetails": f"descriptions: [{', '.join(descriptions)}]",
            },
            "capacity": capacity,
        },
    }
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", body
    )


async def read_instances(api: client.ApiClient) -> dict[str, Instance]:
    listed = await client.CustomObjectsApi(api).list_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "instances"
    )
    return {i["metadata"]["name"]: Instance.from_wire(i) for i in listed["items"]}


def metric(name: str, labels: dict[str, str] | None = None) -> float:
    """A sample of this process's default Prometheus registry (0 when never observed)."""
    return REGISTRY.get_sample_value(name, labels or {}) or 0.0


def rss_kb(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM (peak) of a process, in kB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0])
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report(**values: object) -> None:
    print(json.dumps(values), flush=True)


def sends() -> dict[str, float]:
    return {
        level: metric("akri_list_and_watch_sends_total", {"level": level})
        for level in ("instance", "configuration")
    }


def allocate_seconds() -> dict[str, float]:
    """Sum and count of akri_allocation_latency_seconds of instance-level Allocates."""
    level = {"level": "instance"}
    return {
        "sum": metric("akri_allocation_latency_seconds_sum", level),
        "count": metric("akri_allocation_latency_seconds_count", level),
    }


async def child(root: Path, kubeconfig: Path, node: str) -> None:
    """The agent of `node` in its own process (`python bench/_common.py --child ...`), with an
    embedded debugEcho; a line of JSON on stdout at start and per SIGUSR1."""
    raise_open_files(OPEN_FILES)
    settings = agent_settings(root, node, kubeconfig=kubeconfig, log_level="WARNING")
    echo = DebugEcho(shared=True, availability_file=root / "availability")
    agent = Agent(settings, handlers=[echo])
    report(baseline=rss_kb(), started=time.time())
    task = asyncio.create_task(agent.run(), name="agent")
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, task.cancel)
    loop.add_signal_handler(
        signal.SIGUSR1, lambda: report(sends=sends(), allocate=allocate_seconds(), rss=rss_kb())
    )
    with contextlib.suppress(asyncio.CancelledError):
        await task


class AgentProcess:
    """An agent process started by `spawn`; stop it with `stop`."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pid = process.pid

    @classmethod
    async def spawn(
        cls, root: Path, kubeconfig: Path, node: str
    ) -> tuple[AgentProcess, dict[str, object]]:
        """Start the agent; returns it and its first line (`baseline` RSS, `started` time)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            __file__,
            "--child",
            str(root),
            str(kubeconfig),
            node,
            stdout=asyncio.subprocess.PIPE,
        )
        agent = cls(process)
        return agent, await agent.line()

    async def line(self) -> dict[str, object]:
        assert self.process.stdout is not None
        async with asyncio.timeout(30):
            raw = await self.process.stdout.readline()
        if not raw:
            raise RuntimeError(f"the agent process exited ({await self.process.wait()})")
        loaded: dict[str, object] = json.loads(raw)
        return loaded

    async def stats(self) -> dict[str, object]:
        self.process.send_signal(signal.SIGUSR1)
        return await self.line()

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(20):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


def plugin_socket(directory: Path, resource: str) -> Path:
    """The socket a plugin of another process serves `resource` on (its one incarnation)."""
    found = sorted(directory.glob(f"{resource.replace('/', '-')}-*.sock"))
    if len(found) != 1:
        raise RuntimeError(f"expected one socket of {resource} in {directory}, found {found}")
    return found[0]


if __name__ == "__main__":
    if len(sys.argv) != 5 or sys.argv[1] != "--child":
        sys.exit("usage: _common.py --child ROOT KUBECONFIG NODE (started by the benchmarks)")
    quiet_logs()
    asyncio.run(child(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]))
