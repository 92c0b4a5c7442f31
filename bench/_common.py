"""What the benchmarks share: request counting on the API emulator, percentiles, the table.

Not a benchmark itself; each `bench_*.py` imports it (they run as scripts, so `bench/` is on
sys.path). Numbers are printed, never judged: a target is shown next to the number it concerns.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import grpc
from kubernetes_asyncio import client
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from akri import naming
from akri.agent.main import YOUNG_GC_THRESHOLD
from akri.agent.settings import AgentSettings
from akri.api import Instance, crd_definitions
from akri.proto.deviceplugin.v1beta1.api_pb2 import DevicePluginOptions, Empty
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginStub
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from akri.sim.kubelet import Kubelet
from akri.sim.manifests import debug_echo_configuration
from akri.sim.report import Row, row_line

if TYPE_CHECKING:
    from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginAsyncStub

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


def report(*rows: Row) -> None:
    """Print rows for `make report` (docs/performance.md); see `akri.sim.report` for the format."""
    for row in rows:
        print(row_line(row), flush=True)


def median(samples: Sequence[float]) -> float:
    return statistics.median(samples) if samples else math.nan


def spread(samples: Sequence[float], unit: str, digits: int = 2) -> str:
    """`median (min - max, n=N)` of one number over several runs."""
    if len(samples) == 1:
        return f"{samples[0]:.{digits}f} {unit}".rstrip()
    low, high = min(samples), max(samples)
    return (
        f"{median(samples):.{digits}f} {unit} ({low:.{digits}f} - {high:.{digits}f}, "
        f"n={len(samples)})"
    ).replace(f" {unit} (", f" {unit} (" if unit else " (")


def loads(pairs: Sequence[tuple[float, float]]) -> str:
    """How many runs, and the 1-minute load average before and after each."""
    return f"{len(pairs)}; " + ", ".join(f"{a:.1f}/{b:.1f}" for a, b in pairs)


def report_table(rows: Sequence[tuple[str, str]], section: str = "") -> None:
    """Print a printed table's rows for `make report` too: a `target ...` row becomes a target
    (with its verdict) of the nearest row above it that is not indented; rows without a value
    are skipped."""
    out: list[Row] = []
    owner: int | None = None
    for name, value in rows:
        label = name.strip()
        if label.startswith("target") and owner is not None:
            row = out[owner]
            target = f"{label.removeprefix('target ')}: {value}"
            out[owner] = Row(row.metric, row.value, "; ".join(filter(None, [row.target, target])))
        elif value:
            if not name.startswith(" "):
                owner = len(out)
            out.append(Row(f"{section}{label}", value))
    report(*out)


@dataclass(frozen=True)
class Section:
    title: str
    rows: Sequence[tuple[str, str]]
    prefix: str = ""
    """Put before each metric in the report (which shows no titles)."""


def finish(sections: Sequence[Section], began: float, load_before: float) -> None:
    """Print the tables, the summary of targets, the run time and the machine's 1-minute load
    average before and after, then the same rows for `make report`."""
    load = f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after"
    for section in sections:
        print(table(section.rows, section.title))
        print()
    print(summary(*(section.rows for section in sections)))
    took = time.monotonic() - began
    print(f"\n(ran {took:.1f} s on {os.cpu_count()} CPUs; 1-min load average {load})")
    report(Row("1-min load average during the run", load))
    for section in sections:
        report_table(section.rows, section.prefix)


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


def collect_like_the_agent() -> None:
    """The emulators in this process collect garbage as the agent does (`YOUNG_GC_THRESHOLD`).

    At Python's default threshold the collector took 0.2-0.4 s of their 2.3 s of CPU in each
    kubelet restart of bench_agent_scale (every older-generation collection walks the API
    emulator's objects): a cost a kubelet and an API server written in Go do not have, taken
    from the cores the agents run on."""
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])


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
    body = debug_echo_configuration(name, descriptions, capacity, namespace=NAMESPACE)
    await client.CustomObjectsApi(api).create_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", body
    )


async def read_instances(api: client.ApiClient) -> dict[str, Instance]:
    listed = await client.CustomObjectsApi(api).list_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "instances"
    )
    return {i["metadata"]["name"]: Instance.from_wire(i) for i in listed["items"]}


def stored(server: ApiServer, plural: str, namespace: str = NAMESPACE) -> int:
    """How many objects of a custom resource the API emulator holds now (read in process)."""
    kind = server.operations.kind(naming.GROUP, naming.VERSION, plural)
    return len(server.operations.store.objects(kind.key, namespace))


async def follow_creates(
    server: ApiServer, creates: FaultRule, count: int
) -> tuple[float, float, int]:
    """Sampled every 10 ms until the emulator stores `count` Instances: when the first create
    (counted by `creates`) arrived, when the last was stored, and the most in flight at once."""
    first, peak = math.nan, 0
    async with asyncio.timeout(180):
        while (done := stored(server, "instances")) < count:
            if creates.hits and math.isnan(first):
                first = time.monotonic()
            peak = max(peak, creates.hits - done)
            await asyncio.sleep(0.01)
    return first, time.monotonic(), peak


def metric(registry: CollectorRegistry, name: str, labels: dict[str, str] | None = None) -> float:
    """A sample of an in-process agent's registry (0 when never observed)."""
    return registry.get_sample_value(name, labels or {}) or 0.0


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
    return _named_cpu(Path(f"/proc/{pid}"))[1]


def thread_cpu(pid: int) -> dict[tuple[str, str], float]:
    """User + system CPU time of each thread of a process, by (thread id, thread name)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        name, cpu = _named_cpu(task)
        found[(task.name, name)] = cpu
    return found


def _named_cpu(proc: Path) -> tuple[str, float]:
    """The name and user + system CPU seconds of a /proc process or task directory."""
    head, _, tail = (proc / "stat").read_text().rpartition(")")
    fields = tail.split()
    return head.partition("(")[2], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def allocate_seconds(registry: CollectorRegistry) -> dict[str, float]:
    """Sum and count of akri_allocation_latency_seconds of instance-level Allocates."""
    level = {"level": "instance"}
    return {
        "sum": metric(registry, "akri_allocation_latency_seconds_sum", level),
        "count": metric(registry, "akri_allocation_latency_seconds_count", level),
    }


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class AgentProcess:
    """The real `akri-agent` program in its own process, configured through its environment
    as the DaemonSet does, with its embedded debugEcho; its RSS and CPU are its own, and its
    counters are read from its own /metrics endpoint."""

    def __init__(self, process: asyncio.subprocess.Process, metrics_port: int) -> None:
        self.process = process
        self.pid = process.pid
        self._metrics = f"http://127.0.0.1:{metrics_port}/metrics"

    @classmethod
    async def spawn(cls, root: Path, kubeconfig: Path, node: str, **extra: str) -> AgentProcess:
        """`extra` adds or overrides settings, e.g. RECLAIM_GRACE="3600"."""
        settings = agent_settings(root, node)
        port = free_port()
        environment = {
            "AGENT_NODE_NAME": node,
            "KUBECONFIG": str(kubeconfig),
            "DEVICE_PLUGINS_DIR": str(settings.device_plugins_dir),
            "POD_RESOURCES_SOCKET": str(settings.pod_resources_socket),
            "DISCOVERY_HANDLERS_DIRECTORY": str(settings.discovery_handlers_directory),
            "ENABLE_DEBUG_ECHO": "true",
            "DEBUG_ECHO_AVAILABILITY_FILE": str(root / "availability"),
            "METRICS_PORT": str(port),
            "LOG_LEVEL": "WARNING",
            **extra,
        }
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "akri.agent.main",
            env={**os.environ, **environment},  # and this process's open-files limit
        )
        return cls(process, port)

    async def stats(self) -> Stats:
        """The agent's counters now, and its memory."""
        async with aiohttp.ClientSession() as session, session.get(self._metrics) as response:
            text = await response.text()
        samples = {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        }

        def value(name: str, **labels: str) -> float:
            return samples.get((name, tuple(sorted(labels.items()))), 0.0)

        return Stats(
            sends={
                level: value("akri_list_and_watch_sends_total", level=level)
                for level in ("instance", "configuration")
            },
            allocate_sum=value("akri_allocation_latency_seconds_sum", level="instance"),
            allocate_count=value("akri_allocation_latency_seconds_count", level="instance"),
            rss=rss_kb(self.pid),
            conflicts=value("akri_slot_conflict_retries_total"),
            batches=value("akri_allocate_batches_total"),
            cpu=cpu_seconds(self.pid),
        )

    async def stop(self) -> None:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                async with asyncio.timeout(20):
                    await self.process.wait()
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


@dataclass(frozen=True)
class Stats:
    sends: dict[str, float]
    """ListAndWatch sends so far, by plugin level."""
    allocate_sum: float
    allocate_count: float
    """Seconds spent in instance-level Allocates, and how many."""
    rss: dict[str, int]
    conflicts: float
    """Writes that met a 409 and were decided again."""
    batches: float
    """Batches of Allocates decided (group commit)."""
    cpu: float
    """CPU seconds of the process so far."""


IMPORT_COST = """
import sys, time
began = time.perf_counter()
__import__(sys.argv[1])
took = time.perf_counter() - began
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        print(int(line.split()[1]) / 1024, took)
"""


def import_cost(module: str) -> tuple[float, float]:
    """RSS (MB) and seconds of a fresh interpreter that only imports `module`."""
    output = subprocess.run(
        [sys.executable, "-c", IMPORT_COST, module], check=True, capture_output=True, text=True
    ).stdout
    rss, took = output.split()
    return float(rss), float(took)


def plugin_socket(directory: Path, resource: str) -> Path:
    """The socket a plugin of another process serves `resource` on (its one incarnation)."""
    found = sorted(directory.glob(f"{resource.replace('/', '-')}-*.sock"))
    if len(found) != 1:
        raise RuntimeError(f"expected one socket of {resource} in {directory}, found {found}")
    return found[0]


CALL_TIMEOUT_S = 10.0
"""Longest wait for one gRPC call of a floor measurement (a stuck run, not a verdict)."""


async def answer_options(
    request: Empty, context: grpc.aio.ServicerContext[Any, Any]
) -> DevicePluginOptions:
    return DevicePluginOptions()


def echo_handler() -> grpc.GenericRpcHandler:
    """The least a device-plugin server can do: answer GetDevicePluginOptions."""
    method = grpc.unary_unary_rpc_method_handler(
        answer_options,
        request_deserializer=Empty.FromString,
        response_serializer=DevicePluginOptions.SerializeToString,
    )
    return grpc.method_handlers_generic_handler(
        "v1beta1.DevicePlugin", {"GetDevicePluginOptions": method}
    )


async def round_trips(stub: DevicePluginAsyncStub, calls: int, warmup: int = 20) -> list[float]:
    """Seconds of each of `calls` GetDevicePluginOptions, after `warmup` unmeasured ones."""
    for _ in range(warmup):
        await stub.GetDevicePluginOptions(Empty(), timeout=CALL_TIMEOUT_S)
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await stub.GetDevicePluginOptions(Empty(), timeout=CALL_TIMEOUT_S)
        samples.append(time.perf_counter() - started)
    return samples


async def bare_round_trips(root: Path, calls: int) -> list[float]:
    """The floor of any plugin call: a grpc.aio unary round trip over a unix socket to a
    server that does nothing, in this process."""
    path = root / "echo.sock"
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((echo_handler(),))
    server.add_insecure_port(f"unix://{path}")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"unix://{path}") as channel:
            stub: DevicePluginAsyncStub = DevicePluginStub(channel)
            return await round_trips(stub, calls)
    finally:
        await server.stop(grace=None)
