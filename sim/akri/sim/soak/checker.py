"""The soak's invariants, decided over plain snapshots of the cluster (no I/O here).

The harness reads the API and every kubelet's PodResources into a `Snapshot` after every
event it injects (and between events); `Checker.check` says what is wrong. Two kinds of rule:

- at every instant: no slot used by two pods; no Instance with more slots in use by running
  containers than its capacity (a capacity lowered under running pods binds the pods that
  start after the edit); no corrupt deviceUsage value; no component that exited unkilled.
- within a bound, counted only while the node concerned is healthy (its agent ready, its
  kubelet up, the API answering), so a fault is given its bound again once it ends: every device a
  container uses is recorded for its node in deviceUsage; no slot stays held by a node where
  no container uses it; every device visible on a node has an Instance listing the node, and a
  node whose device is gone leaves the Instance's nodes.

A device in use is one that a kubelet's PodResources lists for a pod the API still has, not in
a terminal phase: a deleted pod's containers are being stopped, and a pod of a lost node is
deleted by Kubernetes once the node is declared lost.

In DRA mode the scheduler allocates and ResourceClaims are the record: a device in use is a
slot an allocated claim holds for a pod (`claim_uses`), and the rules about deviceUsage do not
apply; no slot given twice, no Instance over capacity and discovery are checked as before.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from akri import naming
from akri.slots import ConfigurationHolder, Corrupt, NodeHolder, parse_usage

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class Use:
    """One device of one container, as a kubelet's PodResources lists it."""

    node: str
    pod: str
    """`namespace/name`."""
    container: str
    resource: str
    """`akri.sh/<instance>` (device: a slot id) or `akri.sh/<configuration>` (a virtual id)."""
    device: str


@dataclass(frozen=True)
class InstanceView:
    name: str
    configuration: str
    capacity: int
    nodes: frozenset[str]
    usage: Mapping[str, str]
    """Slot id -> deviceUsage value, as stored (free slots may be absent or "")."""


@dataclass(frozen=True)
class Snapshot:
    at: float
    """Seconds on a monotonic clock."""
    instances: Mapping[str, InstanceView]
    pods: Mapping[str, str]
    """Every pod the API has (`namespace/name`) -> its phase."""
    uses: Collection[Use]
    visible: Collection[tuple[str, str]]
    """(node, Instance name) of every device the harness has online on a node."""
    healthy: Collection[str]
    """Nodes whose agent is ready (caches synced; a process still starting is not) and whose
    kubelet runs, while the API answers; bounded rules count there."""
    crashes: Collection[str] = ()
    """Components that exited without being killed."""
    claims_are_the_record: bool = False
    """DRA mode: `uses` come from allocated ResourceClaims, which are the record (no
    deviceUsage), so only the rules that do not read deviceUsage apply."""


@dataclass(frozen=True)
class Bounds:
    """Seconds a healthy node may take to make each bounded rule hold again."""

    record: float
    """From a container using a device to the device recorded for the container's node."""
    reclaim: float
    """From a slot no container uses to the slot freed (the reclaim grace and one round)."""
    discover: float
    """From a device online on a node to an Instance listing that node."""
    leave: float
    """From a device offline on a node to the node gone from the Instance (the offline grace)."""


@dataclass(frozen=True)
class Violation:
    rule: str
    key: tuple[str, ...]
    message: str
    at: float

    def __str__(self) -> str:
        return f"[{self.at:.1f}s] {self.rule}: {self.message}"


@dataclass(frozen=True)
class _Problem:
    rule: str
    key: tuple[str, ...]
    message: str
    node: str | None = None
    """The node whose health a bounded problem waits on; None for an instant one."""


@dataclass
class Checker:
    """Feed it every snapshot in order; each problem is reported once while it lasts."""

    bounds: Bounds
    checks: int = 0
    violations: list[Violation] = field(default_factory=list)
    _pending: dict[tuple[str, ...], float] = field(default_factory=dict)
    _reported: set[tuple[str, ...]] = field(default_factory=set)
    _first_use: dict[tuple[str, str], float] = field(default_factory=dict)
    _capacities: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    _crashes: set[str] = field(default_factory=set)
    current: dict[tuple[str, ...], str | None] = field(default_factory=dict)
    """The problems of the last snapshot, bounded or not, with the node each waits on."""

    @property
    def converged(self) -> bool:
        """Whether the last snapshot had no problem at all."""
        return not self.current

    def check(self, snapshot: Snapshot) -> list[Violation]:
        """The violations that `snapshot` newly shows."""
        self.checks += 1
        problems = list(self._problems(snapshot))
        self.current = {(p.rule, *p.key): p.node for p in problems}
        found = []
        current = set()
        for problem in problems:
            key = (problem.rule, *problem.key)
            current.add(key)
            bounded = problem.node is not None
            if bounded and problem.node not in snapshot.healthy:
                self._pending.pop(key, None)  # its clock runs only while the node is healthy
                continue
            since = self._pending.setdefault(key, snapshot.at)
            late = not bounded or snapshot.at - since > self._bound(problem.rule)
            if late and key not in self._reported:
                self._reported.add(key)
                found.append(Violation(problem.rule, problem.key, problem.message, snapshot.at))
        for key in set(self._pending) - current:
            del self._pending[key]
        self._reported &= current
        self.violations += found
        return found

    def _bound(self, rule: str) -> float:
        return float(getattr(self.bounds, _BOUNDED[rule]))

    def _problems(self, snapshot: Snapshot) -> Iterable[_Problem]:
        uses = [
            u for u in snapshot.uses if snapshot.pods.get(u.pod, "Failed") not in TERMINAL_PHASES
        ]
        for crash in snapshot.crashes:
            if crash not in self._crashes:
                self._crashes.add(crash)
                yield _Problem("crash", (crash,), f"{crash} exited without being killed")
        slots = _Slots(snapshot.instances)
        yield from slots.corrupt
        holders: dict[tuple[str, str], set[tuple[str, str]]] = {}
        for use in uses:
            slot = slots.of(use)
            unrecorded = slot is None or not slots.records(slot, use)
            if unrecorded and not snapshot.claims_are_the_record:
                what = f"{use.resource} {use.device} of {use.pod} ({use.container}) on {use.node}"
                yield _Problem(
                    "unrecorded",
                    (use.node, use.pod, use.device),
                    f"{what} is not recorded for {use.node}",
                    use.node,
                )
            if slot is not None:
                holders.setdefault(slot, set()).add((use.node, use.pod))
        yield from self._shared_slots(holders)
        yield from self._over_capacity(snapshot, holders)
        if not snapshot.claims_are_the_record:
            yield from _stale_holdings(slots, uses, snapshot)
        yield from _discovery(snapshot)

    def _shared_slots(
        self, holders: Mapping[tuple[str, str], set[tuple[str, str]]]
    ) -> Iterable[_Problem]:
        for (instance, slot), pods in sorted(holders.items()):
            if len(pods) > 1:
                who = ", ".join(f"{pod} on {node}" for node, pod in sorted(pods))
                yield _Problem(
                    "two-holders",
                    (instance, slot, *sorted(p for _, p in pods)),
                    f"slot {slot} is used by {who}",
                )

    def _over_capacity(
        self, snapshot: Snapshot, holders: Mapping[tuple[str, str], set[tuple[str, str]]]
    ) -> Iterable[_Problem]:
        in_use: dict[str, dict[str, set[tuple[str, str]]]] = {}
        users = set()
        for (instance, slot), pods in holders.items():
            in_use.setdefault(instance, {})[slot] = pods
            users |= {(instance, pod) for _, pod in pods}
        self._first_use = {u: self._first_use.get(u, snapshot.at) for u in users}
        for name, view in snapshot.instances.items():
            history = self._capacities.setdefault(name, [])
            if not history or history[-1][1] != view.capacity:
                history.append((snapshot.at, view.capacity))
        for name, slots in sorted(in_use.items()):
            allowed = self._allowed(name)
            if len(slots) > allowed:
                used = ", ".join(
                    f"{slot} by {' and '.join(f'{pod} on {node}' for node, pod in sorted(pods))}"
                    for slot, pods in sorted(slots.items())
                )
                yield _Problem(
                    "over-capacity",
                    (name,),
                    f"{name} has {len(slots)} slots in use ({used}), capacity {allowed}",
                )

    def _allowed(self, instance: str) -> int:
        """The largest capacity in effect since the newest current user started (less the
        record bound: a pod admitted just before an edit may be seen only after it)."""
        history = self._capacities.get(instance)
        if not history:
            return 0  # slots of an Instance that does not exist
        newest = max(t for (name, _), t in self._first_use.items() if name == instance)
        start = newest - self.bounds.record
        since = [cap for t, cap in history if t > start]
        before = [cap for t, cap in history if t <= start]
        return max(since + before[-1:])


_BOUNDED = {
    "unrecorded": "record",
    "stale": "reclaim",
    "undiscovered": "discover",
    "not-left": "leave",
}


class _Slots:
    """Where each device in use lives: an instance-level id names its slot; a virtual device
    is bound to one only by a `C:<vdev>:<node>` record."""

    def __init__(self, instances: Mapping[str, InstanceView]) -> None:
        self.instances = instances
        self.corrupt: list[_Problem] = []
        self.held: dict[tuple[str, str], NodeHolder | ConfigurationHolder] = {}
        self._bindings: dict[tuple[str, str, str], tuple[str, str]] = {}
        for view in instances.values():
            for slot, value in view.usage.items():
                holder = parse_usage(value)
                if isinstance(holder, Corrupt):
                    self.corrupt.append(
                        _Problem("corrupt", (view.name, slot), f"{view.name} {slot}: {holder}")
                    )
                elif isinstance(holder, NodeHolder | ConfigurationHolder):
                    self.held[(view.name, slot)] = holder
                    if isinstance(holder, ConfigurationHolder):
                        self._bindings[(view.configuration, holder.vdev, holder.node)] = (
                            view.name,
                            slot,
                        )

    def of(self, use: Use) -> tuple[str, str] | None:
        name = use.resource.removeprefix(naming.RESOURCE_PREFIX)
        if name in self.instances:
            return (name, use.device)
        return self._bindings.get((name, use.device, use.node))

    def records(self, slot: tuple[str, str], use: Use) -> bool:
        holder = self.held.get(slot)
        if use.resource.removeprefix(naming.RESOURCE_PREFIX) == slot[0]:
            return holder == NodeHolder(use.node)
        return isinstance(holder, ConfigurationHolder) and holder.node == use.node


DRA_DRIVER = "akri.sh"


def claim_uses(
    claims: Iterable[Mapping[str, Any]],
    pod_nodes: Mapping[str, str],
    instances: Collection[str],
) -> list[Use]:
    """The slots allocated claims hold for the pods they are reserved for (`namespace/name`
    -> node in `pod_nodes`). A device is an Instance (uniqueDevices: one slot per share) or
    one slot `<instance>-<i>` of it."""
    uses = []
    for claim in claims:
        namespace = claim["metadata"].get("namespace", "")
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        for reserved in status.get("reservedFor") or []:
            pod = f"{namespace}/{reserved.get('name', '')}"
            node = pod_nodes.get(pod)
            if node is None:
                continue
            for result in results:
                if result.get("driver") != DRA_DRIVER:
                    continue
                device = str(result.get("device", ""))
                if device in instances:
                    instance, slot = device, f"{device}/{result.get('shareID', '')}"
                else:
                    instance, slot = device.rpartition("-")[0], device
                uses.append(
                    Use(node, pod, result.get("request", ""), naming.resource_name(instance), slot)
                )
    return uses


def _stale_holdings(slots: _Slots, uses: Iterable[Use], snapshot: Snapshot) -> Iterable[_Problem]:
    used = {(slot, use.node) for use in uses if (slot := slots.of(use)) is not None}
    for slot, holder in sorted(slots.held.items()):
        if (slot, holder.node) not in used:
            listed = sorted(
                f"{use.pod} ({snapshot.pods.get(use.pod) or 'deleted'})"
                for use in snapshot.uses
                if use.node == holder.node and slots.of(use) == slot
            )
            why = f" (its kubelet still lists it for {', '.join(listed)})" if listed else ""
            yield _Problem(
                "stale",
                slot,
                f"{slot[1]} is held ({holder}) but no container on {holder.node} uses it{why}",
                holder.node,
            )


def _discovery(snapshot: Snapshot) -> Iterable[_Problem]:
    visible = set(snapshot.visible)
    for node, name in sorted(visible):
        view = snapshot.instances.get(name)
        if view is None or node not in view.nodes:
            if view is None:
                state = "it does not exist"
            else:
                state = f"it lists {', '.join(sorted(view.nodes)) or 'no node'}"
            yield _Problem(
                "undiscovered",
                (node, name),
                f"{name} is visible on {node} but no Instance lists {node} ({state})",
                node,
            )
    for name, view in sorted(snapshot.instances.items()):
        for node in sorted(view.nodes):
            if (node, name) not in visible:
                yield _Problem(
                    "not-left",
                    (node, name),
                    f"{name} still lists {node}, where its device is offline",
                    node,
                )
