"""What the soak injects and when, decided up front from a seed (no I/O here).

The whole schedule comes from `random.Random(seed)` before anything runs, so `SOAK_SEED=<n>`
replays exactly the same events, targets and times; how the cluster answers is what varies.
Faults that hold something down carry their duration; the runner ends them. A node is given
one node fault at a time (an agent kill, a node loss), the API one API fault at a time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from akri import naming


@dataclass(frozen=True)
class Device:
    configuration: str
    description: str


@dataclass(frozen=True)
class Layout:
    """The simulated cluster the plan is made for."""

    nodes: Sequence[str]
    local_nodes: frozenset[str]
    """Nodes whose debugEcho reports local devices (one Instance per node); the rest share."""
    configurations: dict[str, tuple[tuple[str, ...], int, bool]]
    """Name -> (descriptions, initial capacity, uniqueDevices)."""
    offline_grace: float
    node_grace: float
    dra: bool = False
    """Devices are allocated through DRA (docs/design.md §8a): pods ask for Configurations
    only (`akri.sh/<configuration>: N`, which a DeviceClass backs); there is no
    per-Instance extended resource."""

    @property
    def devices(self) -> list[Device]:
        return [
            Device(name, description)
            for name, (descriptions, _, _) in self.configurations.items()
            for description in descriptions
        ]

    def instance(self, device: Device, node: str) -> str:
        """The Instance a node's device is published as."""
        local = node if node in self.local_nodes else None
        return naming.instance_name(device.configuration, device.description, local)


def default_layout(
    nodes: int, offline_grace: float, node_grace: float, *, dra: bool = False
) -> Layout:
    names = [f"node-{i}" for i in range(nodes)]
    return Layout(
        nodes=names,
        local_nodes=frozenset(names[-2:]),
        configurations={
            "cam": (("cam0", "cam1", "cam2", "cam3"), 2, True),
            "mic": (("mic0", "mic1", "mic2"), 3, False),
        },
        offline_grace=offline_grace,
        node_grace=node_grace,
        dra=dra,
    )


@dataclass(frozen=True)
class Event:
    at: float
    """Seconds after the start."""
    kind: str
    node: str = ""
    device: Device | None = None
    duration: float = 0.0
    """How long a fault holds (offline, agent down, node lost, API fault, pod lifetime)."""
    pod: str = ""
    resource: str = ""
    """The resource a pod asks for: an Instance or a Configuration name."""
    count: int = 0
    """Devices a pod asks for, or the new capacity."""
    init: bool = False
    status: int = 0
    delay: float = 0.0
    probability: float = 0.0

    def __str__(self) -> str:
        parts = [f"{self.at:7.2f}s {self.kind}"]
        parts += [f"node={self.node}"] if self.node else []
        parts += [f"device={self.device.description}"] if self.device else []
        parts += [f"pod={self.pod} {self.resource}:{self.count}"] if self.pod else []
        parts += ["init"] if self.init else []
        parts += [f"capacity={self.count}"] if self.kind == "capacity" else []
        parts += [f"status={self.status}"] if self.status else []
        parts += [f"delay={self.delay:.2f}"] if self.delay else []
        parts += [f"for {self.duration:.1f}s"] if self.duration else []
        return " ".join(parts)


WEIGHTS = {
    "pod": 30,
    "blink": 6,
    "offline": 3,
    "hold-offline": 3,
    "kubelet-restart": 3,
    "agent-kill": 3,
    "leader-kill": 2,
    "latency": 0.5,
    "errors": 0.5,
    "drop-watches": 2,
    "capacity": 2,
    "node-loss": 1,
}
ALL_KINDS = (*WEIGHTS, "pause")
ERROR_CODES = (409, 410, 429, 500)
PAUSE_S = 30.0
MEAN_GAP_S = 1.0


@dataclass
class _Planner:
    layout: Layout
    rng: random.Random
    kinds: Sequence[str]
    events: list[Event] = field(default_factory=list)
    node_busy: dict[str, float] = field(default_factory=dict)
    api_busy: float = 0.0
    lost_until: float = 0.0
    pods: int = 0

    def node(self, at: float) -> str | None:
        """A node with no node fault in progress, or None."""
        free = [n for n in self.layout.nodes if self.node_busy.get(n, 0.0) <= at]
        return self.rng.choice(free) if free else None

    def pod(self, at: float, node: str, device: Device | None = None, lifetime: float = 0) -> None:
        """A pod pinned to `node` asking for one Instance (`device`) or its Configuration."""
        self.pods += 1
        device = device or self.rng.choice(self.layout.devices)
        _, _, unique = self.layout.configurations[device.configuration]
        instance_level = self.rng.random() < 0.5 and not self.layout.dra
        resource = self.layout.instance(device, node) if instance_level else device.configuration
        self.events.append(
            Event(
                at,
                "pod",
                node=node,
                pod=f"soak-{self.pods}",
                resource=resource,
                count=self.rng.randint(1, 2 if instance_level or unique else 3),
                init=self.rng.random() < 0.25,
                duration=lifetime or self.rng.uniform(3, 40),
            )
        )

    def add(self, at: float, kind: str) -> None:
        rng, layout = self.rng, self.layout
        api_free = self.api_busy <= at
        if kind == "pod":
            self.pod(at, rng.choice(layout.nodes))
        elif kind in ("blink", "offline", "hold-offline"):
            node, device = rng.choice(layout.nodes), rng.choice(layout.devices)
            grace = layout.offline_grace
            duration = (
                rng.uniform(0.2, 0.7 * grace) if kind == "blink" else rng.uniform(1.5, 3) * grace
            )
            if kind == "hold-offline":
                self.pod(at, node, device, lifetime=duration + 20)
                at += 3.0  # the pod runs by then, unless its device is taken
            self.events.append(Event(at, "offline", node=node, device=device, duration=duration))
        elif kind in ("kubelet-restart", "agent-kill", "node-loss"):
            target = self.node(at)
            if target is None or (kind == "node-loss" and self.lost_until > at):
                return
            if kind == "agent-kill":
                duration = rng.uniform(0.2, 5)
            elif kind == "node-loss":
                duration = rng.uniform(1.5, 2.5) * layout.node_grace
                self.lost_until = at + duration + 10
            else:
                duration = 0.0
            self.node_busy[target] = at + duration + 3
            self.events.append(Event(at, kind, node=target, duration=duration))
        elif kind in ("latency", "errors") and api_free:
            duration = rng.uniform(3, 10)
            self.api_busy = at + duration + 10
            if kind == "latency":
                delay, probability = rng.uniform(0.05, 0.5), rng.uniform(0.2, 0.6)
                self.events.append(
                    Event(at, kind, duration=duration, delay=delay, probability=probability)
                )
            else:
                status, probability = rng.choice(ERROR_CODES), rng.uniform(0.05, 0.3)
                self.events.append(
                    Event(at, kind, duration=duration, status=status, probability=probability)
                )
        elif kind == "capacity":
            name = rng.choice(sorted(layout.configurations))
            self.events.append(Event(at, kind, resource=name, count=rng.randint(1, 4)))
        elif kind in ("leader-kill", "drop-watches"):
            self.events.append(Event(at, kind))


def make_plan(
    seed: int, seconds: float, layout: Layout, kinds: Sequence[str] = ALL_KINDS
) -> list[Event]:
    """Events at random gaps until `seconds`; one full API pause near the middle of a run long
    enough to recover from it."""
    rng = random.Random(seed)
    planner = _Planner(layout, rng, kinds)
    chosen = [k for k in WEIGHTS if k in kinds]
    weights = [WEIGHTS[k] for k in chosen]
    pause_at = (
        rng.uniform(0.3, 0.6) * seconds if "pause" in kinds and seconds >= 3 * PAUSE_S else None
    )
    at = rng.expovariate(1 / MEAN_GAP_S)
    while at < seconds:
        if pause_at is not None and at >= pause_at and planner.api_busy <= at:
            planner.events.append(Event(at, "pause", duration=PAUSE_S))
            planner.api_busy = at + PAUSE_S + 10
            pause_at = None
        else:
            planner.add(at, rng.choices(chosen, weights)[0])
        at += rng.expovariate(1 / MEAN_GAP_S)
    return sorted(planner.events, key=lambda e: e.at)
