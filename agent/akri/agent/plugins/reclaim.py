"""Keeps this node's `deviceUsage` and its containers in agreement, both ways (docs/design.md §5.5).

The device-plugin API has no Deallocate, so the kubelet's PodResources `List` is the truth
about which devices containers use. Every interval, and at once when an Instance loses a
holding that a container of this node uses, the reclaimer compares the two (`akri.slot_sync`):

- a holding unused for the grace period is released with a guarded write; only this node's
  holdings are ever touched, and only listed devices count, so an unrelated pod that is stuck
  or unready never delays anything (Akri #681). The release is decided under the node's
  Allocate lock but written outside it, with only the holdings it frees fenced
  (`Allocations.fence`): a slow API delays the Allocates of those alone, and the write is
  given the time it needs instead of being cut to spare the others; one that fails is tried
  again the next round, and one cut without an answer keeps its holdings fenced until then;
- a device in use that the record lost is recorded again when its slot is free; when the record
  gives the slot to another holder, the conflict is reported (a SlotConflict condition on the
  Instance, an Event on the pod) and nothing is taken from the other holder;
- an Instance kept only for slots in use (no node sees its device) is deleted once they are free.

When the kubelet does not answer, nothing is changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp
import grpc
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import slots
from akri.agent.instances import InstanceCache, Subscription
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins.allocations import Allocations
from akri.agent.plugins.conflicts import conflict_conditions
from akri.api import Instance, InstanceStatus
from akri.api.pool import view, with_usage
from akri.kube.calls import call, describe
from akri.kube.events import record_event
from akri.kube.guarded import HTTP_CONFLICT, HTTP_NOT_FOUND, UpdateConflict
from akri.naming import RESOURCE_PREFIX
from akri.proto.podresources.v1.api_pb2 import ListPodResourcesRequest, ListPodResourcesResponse
from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerStub
from akri.proto.podresources.v1.constants import POD_RESOURCES_SOCKET
from akri.slot_sync import (
    Conflict,
    PodKey,
    Sighting,
    SlotRef,
    User,
    ended_holdings,
    pods_of,
    recorded,
    stale_holdings,
    sync,
)

if TYPE_CHECKING:  # the async stub type exists only in the generated typing stubs
    from akri.proto.podresources.v1.api_pb2_grpc import PodResourcesListerAsyncStub

log = logging.getLogger(__name__)

RECLAIM_INTERVAL_S = 10.0
RECLAIM_GRACE_S = 20.0
PROMPT_INTERVAL_S = 1.0
"""Rounds while a pod that used a slot may be ending (its slot is unused now, or its Instance
is being deleted): its slot is freed about this soon after the pod is gone (docs/design.md
§5.5), so deleting an Instance or a Configuration waits for the brokers, not for the grace."""
LIST_TIMEOUT_S = 5.0
WRITE_TIMEOUT_S = 30.0
"""Bounds a write that hangs. No Allocate waits for it but those of the holdings it frees, so it
is long enough for a slow API: a write cut every time would never free the slot."""
COMPONENT = "akri-agent"
_API_ERRORS = (ApiException, UpdateConflict, aiohttp.ClientError, TimeoutError)


def devices_in_use(response: ListPodResourcesResponse) -> dict[slots.Holding, set[User]]:
    """Every akri.sh device some listed container uses, with the containers using it."""
    uses: dict[slots.Holding, set[User]] = {}
    for pod in response.pod_resources:
        for container in pod.containers:
            user = User(pod.namespace, pod.name, container.name)
            for devices in container.devices:
                if devices.resource_name.startswith(RESOURCE_PREFIX):
                    for device in devices.device_ids:
                        holding = slots.Holding(devices.resource_name, device)
                        uses.setdefault(holding, set()).add(user)
    return uses


@dataclass
class Round:
    """What one round did."""

    freed: list[slots.Holding] = field(default_factory=list)
    recorded: list[slots.Holding] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    unknown: list[slots.Holding] = field(default_factory=list)
    ended: list[slots.Holding] = field(default_factory=list)
    """Of `freed`, or to be: those freed before the grace, as the pods that used them ended."""


def _pool(instances: Collection[Instance]) -> dict[str, Instance]:
    """The Instances by name; of two with one name (in two namespaces) the first namespace is
    the one whose resource the plugins serve (`desired`), so the one its devices stand for."""
    pool: dict[str, Instance] = {}
    for instance in sorted(instances, key=lambda i: i.metadata.namespace or ""):
        pool.setdefault(instance.metadata.name or "", instance)
    return pool


class Reclaimer:
    def __init__(
        self,
        cache: InstanceCache,
        node: str,
        pod_resources_socket: Path = Path(POD_RESOURCES_SOCKET),
        *,
        allocations: Allocations,
        metrics: AgentMetrics,
        interval: float = RECLAIM_INTERVAL_S,
        grace: float = RECLAIM_GRACE_S,
        list_timeout: float = LIST_TIMEOUT_S,
        write_timeout: float = WRITE_TIMEOUT_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cache = cache
        self._node = node
        self._socket = pod_resources_socket
        self._allocations = allocations
        self._metrics = metrics
        self._interval = interval
        self._grace = grace
        self._list_timeout = list_timeout
        self._write_timeout = write_timeout
        self._clock = clock
        self._unused_since: dict[slots.Holding, float] = {}
        self._last_seen: dict[slots.Holding, Sighting] = {}
        """The containers that last used each holding of this node, as PodResources listed."""
        self._prompt = False  # the next round soon: a pod that used a slot may be ending
        self._due = asyncio.Event()
        self._told: set[tuple[User, str, str]] = set()
        self._core: client.CoreV1Api | None = None

    @property
    def seen_in_use(self) -> set[slots.Holding]:
        """This node's holdings the last round's List showed in use, or showed before."""
        return set(self._last_seen)

    async def run(self) -> None:
        """Reconcile every interval, and when a used slot's record changes, until cancelled."""
        await self._cache.synced.wait()
        with self._cache.subscribe() as changes:
            watcher = asyncio.create_task(self._follow(changes), name="slot record watch")
            try:
                while True:
                    self._due.clear()
                    try:
                        await self.reclaim()
                    except Exception:  # the next round tries again; the agent must keep running
                        log.exception("reconciling slots failed")
                    wait = min(self._interval, PROMPT_INTERVAL_S) if self._prompt else None
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait or self._interval):
                            await self._due.wait()
            finally:
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)

    async def _follow(self, changes: Subscription) -> None:
        """Call a round as soon as an Instance stops recording a holding this node remembers
        (one granted lately, recorded, or in use at the last round), or such an Instance is
        being deleted."""
        while True:
            changed = await changes.next()
            watched = self._allocations.bindings()
            names = {slot.instance for slot in watched.values()}
            for namespace, name in changed:
                if name not in names:
                    continue
                current = self._cache.get(namespace, name)
                kept = {} if current is None else recorded([view(current)], self._node)
                deleting = current is not None and current.metadata.deletion_timestamp is not None
                if deleting or any(
                    s.instance == name and h not in kept for h, s in watched.items()
                ):
                    self._due.set()  # being deleted: its brokers' pods are ending

    async def reclaim(self) -> Round:
        """One round; returns what it did."""
        listed_at = self._clock()
        uses = await self._list()
        if uses is None:
            return Round()
        done = Round()
        left = {h: seen for h, seen in self._last_seen.items() if h not in uses}
        ended = await self._ended(pods_of(u for seen in left.values() for u in seen.users))
        async with self._allocations.lock:  # no Allocate while deciding
            pool = _pool(self._cache.all())
            views = {name: view(instance) for name, instance in pool.items()}
            mine = recorded(views.values(), self._node)
            # A grant is a use at the time of the grant: the kubelet may not have recorded it.
            since = dict(self._unused_since)
            granted = self._allocations.recent(self._grace)
            for holding, at in granted.items():
                since[holding] = max(since.get(holding, at), at)
            self._allocations.bound(mine)
            remembered = self._allocations.bindings(mine.keys() | uses.keys() | granted.keys())
            stale, self._unused_since = stale_holdings(
                mine, uses, since, self._clock(), self._grace
            )
            over = ended_holdings(mine, uses, left, ended, granted) - stale
            stale |= over
            self._last_seen = {h: seen for h, seen in left.items() if h in mine} | {
                h: Sighting(frozenset(users), listed_at) for h, users in uses.items()
            }
            self._prompt = bool(left.keys() & mine.keys() - stale) or any(
                instance.metadata.deletion_timestamp is not None
                and slots.holdings([views[name]], self._node)
                for name, instance in pool.items()
            )
            decision = sync(views.values(), self._node, uses, remembered)
            self._allocations.fence(stale)

            async def write(names: list[str]) -> set[str]:
                """Write these Instances; returns those whose write got no answer."""
                answered = await asyncio.gather(
                    *(self._write(pool[n], views, uses, remembered, stale, done) for n in names)
                )
                return {n for n, ok in zip(names, answered, strict=True) if not ok}

            # A lost record is restored before an Allocate could give its slot away.
            unanswered = await write(sorted(decision.record))
        done.ended = sorted(over, key=str)
        releases = {mine[h].instance for h in stale} - decision.record.keys()
        unanswered |= await write(sorted(releases))
        self._allocations.fence({h for h in stale if mine[h].instance in unanswered})
        done.conflicts, done.unknown = decision.conflicts, decision.unknown
        await self._report(pool, decision.conflicts)
        await self._tell(
            [(c.users, "SlotConflict", c.problem) for c in decision.conflicts]
            + self._unknown_notes(decision.unknown, uses)
        )
        return done

    async def _ended(self, pods: set[PodKey]) -> set[PodKey]:
        """Which of `pods` are over: gone from the API, or Succeeded or Failed. A pod whose
        state cannot be read counts as running (its slots wait for the grace)."""
        if not pods:
            return set()
        if self._core is None:
            self._core = client.CoreV1Api(self._cache.api_client)  # 3 MB: only when needed
        core = self._core

        async def over(namespace: str, name: str) -> bool:
            try:
                async with asyncio.timeout(self._list_timeout):
                    pod = await call(core.read_namespaced_pod, name, namespace)
            except ApiException as error:
                return error.status == HTTP_NOT_FOUND
            except (aiohttp.ClientError, TimeoutError):
                return False
            return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")

        keys = sorted(pods)
        answers = await asyncio.gather(*(over(*key) for key in keys))
        return {key for key, is_over in zip(keys, answers, strict=True) if is_over}

    async def _list(self) -> dict[slots.Holding, set[User]] | None:
        try:
            async with grpc.aio.insecure_channel(f"unix://{self._socket}") as channel:
                stub: PodResourcesListerAsyncStub = PodResourcesListerStub(channel)
                response = await stub.List(ListPodResourcesRequest(), timeout=self._list_timeout)
        except grpc.aio.AioRpcError as error:
            log.warning(
                "PodResources at %s did not answer (%s): changing nothing this round",
                self._socket,
                error.details(),
            )
            return None
        return devices_in_use(response)

    async def _write(
        self,
        instance: Instance,
        views: Mapping[str, slots.SlotPool],
        uses: Mapping[slots.Holding, Collection[User]],
        remembered: Mapping[slots.Holding, SlotRef],
        stale: Collection[slots.Holding],
        done: Round,
    ) -> bool:
        """Release `stale` and record what the record lost, decided again on the fresh Instance.
        False when the write got no answer: it may still land."""
        namespace, name = instance.metadata.namespace or "", instance.metadata.name or ""
        others = [v for n, v in views.items() if n != name]
        changes: list[tuple[set[slots.Holding], set[slots.Holding]]] = []

        def mutate(fresh: Instance) -> Instance | None:
            before = view(fresh)
            released = slots.release(before, self._node, stale)
            again = sync([*others, released], self._node, uses, remembered).record.get(name, {})
            after = released.with_slots(again)
            kept = slots.holdings([released], self._node)
            changes[:] = [
                (
                    slots.holdings([before], self._node) - kept,
                    slots.holdings([after], self._node) - kept,
                )
            ]
            return with_usage(fresh, after.usage)

        try:
            async with asyncio.timeout(self._write_timeout):
                stored = await self._cache.update(namespace, name, mutate)
        except _API_ERRORS as error:
            log.warning(
                "cannot write the slots of Instance %s/%s: %s", namespace, name, describe(error)
            )
            return isinstance(error, ApiException | UpdateConflict)
        if stored is None or not changes:
            return True
        freed, again = (sorted(c, key=str) for c in changes[0])
        for holding in freed:
            log.info(
                "freed %s of %s (Instance %s): %s",
                holding.device,
                holding.resource,
                name,
                "the pods that used it ended"
                if holding in done.ended
                else f"no container used it for {self._grace:g}s",
            )
        for holding in again:
            log.warning(
                "recorded %s of %s in Instance %s again: a container uses it, the record lost it",
                holding.device,
                holding.resource,
                name,
            )
        self._metrics.slots_reclaimed.inc(len(freed))
        done.freed += freed
        done.recorded += again
        if freed and slots.disposable(view(stored)) and stored.metadata.deletion_timestamp is None:
            await self._delete(stored)
        return True

    async def _delete(self, instance: Instance) -> None:
        """Delete an Instance kept only for the slots just freed, unless it changed since."""
        namespace, name = instance.metadata.namespace or "", instance.metadata.name or ""
        try:
            await self._cache.delete(namespace, name, instance.metadata.resource_version or "")
        except ApiException as error:
            if error.status not in (HTTP_NOT_FOUND, HTTP_CONFLICT):
                log.warning("cannot delete Instance %s/%s: %s", namespace, name, describe(error))
            return
        log.info("deleted Instance %s: no node sees its device and no slot is held", name)

    async def _report(
        self,
        pool: Mapping[str, Instance],
        conflicts: list[Conflict],
    ) -> None:
        """Assert this node's SlotConflict condition on every Instance where it changes."""
        by_instance: dict[str, list[Conflict]] = {}
        for conflict in conflicts:
            by_instance.setdefault(conflict.slot.instance, []).append(conflict)
        now = datetime.now(UTC)
        for name, instance in pool.items():
            found = by_instance.get(name, [])
            status = instance.status or InstanceStatus()
            if conflict_conditions(status.conditions, self._node, found, None, now) is None:
                continue

            def mutate(fresh: Instance, found: list[Conflict] = found) -> InstanceStatus | None:
                current = fresh.status or InstanceStatus()
                conditions = conflict_conditions(
                    current.conditions, self._node, found, fresh.metadata.generation, now
                )
                return (
                    None
                    if conditions is None
                    else current.model_copy(update={"conditions": conditions})
                )

            namespace = instance.metadata.namespace or ""
            try:
                await self._cache.update_status(namespace, name, mutate)
            except _API_ERRORS as error:
                log.warning(
                    "cannot report a slot conflict on Instance %s: %s", name, describe(error)
                )

    def _unknown_notes(
        self, unknown: list[slots.Holding], uses: Mapping[slots.Holding, Collection[User]]
    ) -> list[tuple[Collection[User], str, str]]:
        return [
            (
                uses[holding],
                "SlotNotRecorded",
                f"{holding.device} of {holding.resource} is in use, but no Instance records it "
                "and its slot is not known on this node: it cannot be recorded again",
            )
            for holding in unknown
        ]

    async def _tell(self, notes: list[tuple[Collection[User], str, str]]) -> None:
        """Log each problem and record an Event on each pod concerned, once while it lasts."""
        told = set()
        for users, reason, message in notes:
            for user in sorted(users):
                key = (user, reason, message)
                told.add(key)
                if key not in self._told:
                    log.warning("%s on node %s: %s: %s", reason, self._node, user, message)
                    await self._event(user, reason, f"{user}: {message}")
        self._told = told

    async def _event(self, user: User, reason: str, message: str) -> None:
        if self._core is None:
            self._core = client.CoreV1Api(self._cache.api_client)  # 3 MB: only when needed
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": user.pod, "namespace": user.namespace},
        }
        await record_event(self._core, pod, reason, message, component=COMPONENT, kind="Warning")
