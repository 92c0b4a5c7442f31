"""The soak run: the plan's events against the harness, the checker after every event and
every second in between, and the numbers at the end."""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from akri import naming
from akri.sim.manifests import debug_echo_configuration, pod
from akri.sim.report import Row, row_line
from akri.sim.soak.checker import DRA_DRIVER, Bounds, Checker
from akri.sim.soak.harness import Harness, Timing
from akri.sim.soak.plan import Event, Layout
from akri.sim.soak.user import NAMESPACE

CHECK_INTERVAL_S = 1.0
SETTLE_DEADLINE_S = 180.0


def bounds_for(timing: Timing) -> Bounds:
    """What each bounded rule allows a healthy node, with room for a loaded 2-core machine."""
    slack = 15.0
    return Bounds(
        record=slack,
        reclaim=timing.reclaim_grace + timing.reclaim_interval + slack,
        discover=slack,
        leave=timing.offline_grace + slack,
    )


@dataclass
class Recovery:
    kind: str
    since: float
    done: Callable[[], bool]


@dataclass
class Result:
    seed: int
    seconds: float
    events: Counter[str] = field(default_factory=Counter)
    checks: int = 0
    violations: list[str] = field(default_factory=list)
    starts: list[float] = field(default_factory=list)
    """Pod create -> Running, seconds."""
    refused: int = 0
    reconverge: dict[str, list[float]] = field(default_factory=dict)
    unrecovered: Counter[str] = field(default_factory=Counter)
    lease_losses: int = 0
    load: str = ""

    def rows(self) -> list[Row]:
        """The rows `make report` shows."""
        reference = f"seed {self.seed}, {self.seconds:.0f} s, 8 nodes; load {self.load}"
        rows = [
            Row("violations", str(len(self.violations)), "0", reference),
            Row(
                "events injected",
                str(sum(self.events.values())),
                "",
                ", ".join(f"{k} {v}" for k, v in sorted(self.events.items())),
            ),
            Row("checks made", str(self.checks)),
            Row(
                "pod create -> Running under chaos",
                _spread(self.starts),
                "",
                f"{self.refused} pods refused or never ran",
            ),
        ]
        rows += [
            Row(
                f"reconverge after {kind}",
                _spread(self.reconverge.get(kind, [])),
                "",
                self._missed(kind),
            )
            for kind in self._recovered_kinds()
        ]
        return rows

    def _recovered_kinds(self) -> list[str]:
        return sorted(set(self.reconverge) | set(self.unrecovered))

    def _missed(self, kind: str) -> str:
        missed = self.unrecovered.get(kind, 0)
        return f"{missed} not reconverged by the end" if missed else ""

    def table(self) -> str:
        lines = [
            f"soak: seed {self.seed}, {self.seconds:.0f} s, load average {self.load}",
            "events injected:",
        ]
        lines += [f"  {kind:<18} {count}" for kind, count in sorted(self.events.items())]
        lines.append(f"checks made: {self.checks}")
        lines.append(
            f"pod create -> Running under chaos: {_spread(self.starts)}; "
            f"{self.refused} refused or never ran"
        )
        lines.append("time to reconverge after each fault kind:")
        for kind in self._recovered_kinds():
            missed = self._missed(kind)
            lines.append(
                f"  {kind:<18} {_spread(self.reconverge.get(kind, []))}"
                + (f"; {missed}" if missed else "")
            )
        lines.append(
            f"controller lease losses (exit 1 and restart, by design): {self.lease_losses}"
        )
        lines.append(f"violations: {len(self.violations)}")
        return "\n".join(lines)


def _spread(samples: Sequence[float]) -> str:
    if not samples:
        return "none"
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return f"p50 {p50:.2f} s, p99 {p99:.2f} s, max {ordered[-1]:.2f} s (n={len(ordered)})"


class Soak:
    def __init__(
        self, harness: Harness, plan: Sequence[Event], result: Result, say: Callable[[str], None]
    ) -> None:
        self.harness = harness
        self.plan = plan
        self.result = result
        self.say = say
        self.checker = Checker(bounds_for(harness.timing))
        self._lock = asyncio.Lock()
        self._recoveries: list[Recovery] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._offline: Counter[tuple[str, str]] = Counter()
        self._start = 0.0

    async def run(self) -> None:
        layout = self.harness.layout
        for name, (descriptions, capacity, unique) in layout.configurations.items():
            body = debug_echo_configuration(name, descriptions, capacity, uniqueDevices=unique)
            await self.harness.user.create("configurations", body)
        await self._settle("the cluster to start", Checker(self.checker.bounds))
        self.say(f"soak: cluster up, {len(self.plan)} events planned")
        ticker = asyncio.create_task(self._tick(), name="soak-checks")
        self._start = time.monotonic()
        try:
            for event in self.plan:
                await asyncio.sleep(max(0.0, self._start + event.at - time.monotonic()))
                self.result.events[event.kind] += 1
                await self._inject(event)
                await self.check()
            await asyncio.gather(*self._tasks)
            await self._settle("the cluster to settle after the last event", self.checker)
        finally:
            ticker.cancel()
            for task in self._tasks:
                task.cancel()
            await asyncio.gather(ticker, *self._tasks, return_exceptions=True)
        self.result.checks = self.checker.checks
        self.result.lease_losses = self.harness.lease_losses
        created, started = self.harness.pod_created, self.harness.pod_started
        self.result.starts = [started[p] - created[p] for p in created if p in started]
        self.result.refused = len(created) - len(self.result.starts)
        for recovery in self._recoveries:
            self.result.unrecovered[recovery.kind] += 1

    async def _settle(self, what: str, checker: Checker) -> None:
        end = time.monotonic() + SETTLE_DEADLINE_S
        while True:
            async with self._lock:
                checker.check(await self.harness.snapshot())
            if checker is self.checker:
                self._record(checker)
            if checker.converged:
                return
            if time.monotonic() > end:
                self.say(f"soak: gave up waiting for {what}: {sorted(checker.current)[:5]}")
                return
            await asyncio.sleep(CHECK_INTERVAL_S)

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(CHECK_INTERVAL_S)
            await self.check()

    async def check(self) -> None:
        async with self._lock:
            found = self.checker.check(await self.harness.snapshot())
        for violation in found:
            self.result.violations.append(str(violation))
            self.say(f"VIOLATION {violation}")
        self._record(self.checker)

    def _record(self, checker: Checker) -> None:
        now = time.monotonic()
        for recovery in list(self._recoveries):
            if recovery.done():
                self.result.reconverge.setdefault(recovery.kind, []).append(now - recovery.since)
                self._recoveries.remove(recovery)

    def _later(self, delay: float, then: Callable[[], object]) -> None:
        async def wait() -> None:
            await asyncio.sleep(delay)
            outcome = then()
            if asyncio.iscoroutine(outcome):
                await outcome

        task = asyncio.create_task(wait())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _recovering(
        self, kind: str, node: str | None = None, extra: Callable[[], bool] = lambda: True
    ) -> None:
        """From now until the problems seen now (of `node`, or all) are gone and `extra` holds."""
        await self.check()
        keys = {k for k, n in self.checker.current.items() if node is None or n == node}
        done = lambda: not keys & self.checker.current.keys() and extra()  # noqa: E731
        self._recoveries.append(Recovery(kind, time.monotonic(), done))

    def _serving(self, node: str) -> Callable[[], bool]:
        """Whether the node's kubelet has a plugin for every resource its devices call for
        (in DRA mode: the agent's DRA plugin)."""
        harness = self.harness

        def serving() -> bool:
            target = harness.nodes[node]
            if harness.layout.dra:
                return target.agent.running and DRA_DRIVER in target.kubelet.dra.drivers()
            wanted: set[str] = set()
            for device in harness.layout.devices:
                if device.description not in target.offline:
                    wanted |= {
                        naming.resource_name(harness.layout.instance(device, node)),
                        naming.resource_name(device.configuration),
                    }
            return target.agent.running and wanted <= target.kubelet.registered_resources()

        return serving

    async def _inject(self, event: Event) -> None:
        harness = self.harness
        self.say(f"event {event}")
        match event.kind:
            case "pod":
                await self._pod(event)
            case "offline":
                assert event.device is not None
                key = (event.node, event.device.description)
                self._offline[key] += 1
                harness.set_offline(event.node, event.device.description, True)

                def back(key: tuple[str, str] = key) -> None:
                    self._offline[key] -= 1
                    if not self._offline[key]:
                        harness.set_offline(*key, False)

                self._later(event.duration, back)
            case "kubelet-restart":
                await harness.nodes[event.node].kubelet.restart()
                await self._recovering(event.kind, event.node, self._serving(event.node))
            case "agent-kill":
                agent = harness.nodes[event.node].agent
                await agent.kill()

                async def restart() -> None:
                    if harness.nodes[event.node].lost:
                        return  # lost meanwhile (a late restart): its return starts the agent
                    await agent.start()
                    await self._recovering(event.kind, event.node, self._serving(event.node))

                self._later(event.duration, restart)
            case "node-loss":
                await self._node_loss(event)
            case "leader-kill":
                killed = await harness.kill_leader()
                if killed is not None:
                    await self._recovering(event.kind, extra=lambda: self._led_by_other(killed))
            case "latency" | "errors":
                if event.kind == "latency":
                    harness.api_fault(delay=event.delay, probability=event.probability)
                else:
                    harness.api_fault(
                        status=event.status,
                        probability=event.probability,
                        message=f"soak: injected {event.status}",
                    )
                self._later(event.duration, functools.partial(self._api_back, event.kind))
            case "pause":
                harness.pause_api()
                self._later(event.duration, lambda: self._api_back("pause"))
            case "drop-watches":
                harness.server.faults.drop_watches()
                await self._recovering(event.kind)
            case "capacity":
                await self._capacity(event)

    async def _api_back(self, kind: str) -> None:
        self.harness.end_api_faults()
        await self._recovering(kind)

    def _led_by_other(self, killed: str) -> bool:
        harness = self.harness
        lease = harness.server.operations.store.peek(
            ("coordination.k8s.io", "leases"), NAMESPACE, "akri-controller"
        )
        holder = ((lease or {}).get("spec") or {}).get("holderIdentity") or ""
        return any(
            holder.startswith(f"{c.name}-") and c.running and c.name != killed
            for c in harness.controllers
        )

    async def _pod(self, event: Event) -> None:
        harness = self.harness
        body: Any = pod(event.pod, event.node, event.resource, event.count, init=event.init)
        harness.pod_created[event.pod] = time.monotonic()

        self._later(0, lambda: harness.user.create_pod(body))
        self._later(event.duration, lambda: harness.user.delete_pod(event.pod))

    async def _node_loss(self, event: Event) -> None:
        harness = self.harness
        node = harness.nodes[event.node]
        node.lost = True
        await node.agent.kill()
        await node.kubelet.stop()
        self._later(0.8 * harness.timing.node_grace, lambda: harness.evict(event.node))

        async def back() -> None:
            node.lost = False
            await node.kubelet.start()
            await node.agent.start()
            await self._recovering(event.kind, event.node, self._serving(event.node))

        self._later(event.duration, back)

    async def _capacity(self, event: Event) -> None:
        harness = self.harness
        if not await harness.user.set_capacity(event.resource, event.count):
            self.say(f"soak: capacity of {event.resource} not set to {event.count}")

        def applied() -> bool:
            """Every Instance has the Configuration's capacity: this edit's, or a later one's
            that superseded it."""
            store = harness.server.operations.store
            configuration = store.peek((naming.GROUP, "configurations"), NAMESPACE, event.resource)
            wanted = ((configuration or {}).get("spec") or {}).get("capacity")
            return all(
                (i.get("spec") or {}).get("capacity") == wanted
                for i in store.objects((naming.GROUP, "instances"))
                if (i.get("spec") or {}).get("configurationName") == event.resource
            )

        await self._recovering(event.kind, extra=applied)


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def soak(
    seed: int,
    seconds: float,
    layout: Layout,
    timing: Timing,
    plan: Sequence[Event],
    workdir: Path,
    say: Callable[[str], None],
    log_level: str = "WARNING",
) -> Result:
    result = Result(seed, seconds)
    async with Harness(layout, workdir, timing, log_level) as harness:
        await Soak(harness, plan, result, say).run()
        await asyncio.sleep(0)
    result.violations += [
        f"crash: {c}" for c in harness.crashes if not any(c in v for v in result.violations)
    ]
    result.load = load_average()
    return result


def print_rows(rows: Collection[Row]) -> None:
    for row in rows:
        print(row_line(row), flush=True)
