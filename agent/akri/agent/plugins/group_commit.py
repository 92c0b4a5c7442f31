"""Allocates of one node decided together and written as one guarded write per Instance.

Every Allocate of a node holds the node's lock (`Allocations.lock`) while it decides and
writes, so that the reclaimer never frees a slot the kubelet was just given. One write at a
time per node made a burst of Allocates wait in line, a round trip (and a conflict) each.
Here an Allocate joins a queue; one task takes every request queued by then, decides them in
arrival order on the current state (`decide_batch`: a request that cannot be met is refused
alone and keeps nothing), and writes each changed Instance once, guarded and only over the
state it was decided on. A write that meets a newer state makes the whole batch decide again
on the fresh state, together with the requests queued by then; slots this node already holds
pass, so the rounds converge. Requests that arrive during a round whose writes all land form
the next batch.

Each Allocate keeps its own deadline: one that gives up is left out of decisions not yet made,
and a grant it no longer waits for is recorded like any other (the reclaimer frees it when no
container uses it). A request for a holding whose release the reclaimer is writing is left out
of the batch and queued again once the release is written (`Allocations.fence`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import zlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from akri import slots
from akri.agent.instances import InstanceCache
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins.allocations import Allocations
from akri.api import Instance
from akri.api.pool import view, with_usage
from akri.kube.reflector import Key
from akri.slot_sync import SlotRef

log = logging.getLogger(__name__)

State = Mapping[Key, slots.SlotPool]


@dataclass(frozen=True)
class Grant:
    """What one request was given: per container, the Instance of each device in order, and
    the slot each device is bound to (for the reclaimer)."""

    containers: list[list[str]]
    bindings: dict[slots.Holding, SlotRef]


Decide = Callable[[State], tuple[dict[Key, slots.SlotPool], Grant]]
"""Pure: the Instances a request changes, decided on `state`, and its grant; raises
AllocationError when it cannot be met."""


@dataclass(frozen=True)
class Request:
    reads: Callable[[], Collection[Key]]
    """The Instances its decision depends on, as the cache holds them now."""
    decide: Decide
    holdings: frozenset[slots.Holding]
    """What it asks for: what it takes, and what it gives back when refused."""


@dataclass(frozen=True)
class Decided:
    """A batch decided: the state to write, and each request's grant or refusal."""

    state: dict[Key, slots.SlotPool]
    outcomes: list[Grant | slots.AllocationError]


def decide_batch(
    base: State, node: str, requests: Sequence[Request], held_before: Collection[slots.Holding]
) -> Decided:
    """Decide `requests` in order on `base`. A refused request keeps nothing: what an earlier
    round wrote for it is given back, unless this node held it before the batch or a granted
    request of the batch asks for it too."""
    state = dict(base)
    outcomes: list[Grant | slots.AllocationError] = []
    for request in requests:
        try:
            changed, grant = request.decide(state)
        except slots.AllocationError as error:
            outcomes.append(error)
            continue
        state.update(changed)
        outcomes.append(grant)
    kept = set(held_before)
    for request, outcome in zip(requests, outcomes, strict=True):
        if isinstance(outcome, Grant):
            kept |= request.holdings
    returned = {
        holding
        for request, outcome in zip(requests, outcomes, strict=True)
        if isinstance(outcome, slots.AllocationError)
        for holding in request.holdings
    } - kept
    if returned:
        for key, instance in state.items():
            state[key] = slots.release(instance, node, returned)
    return Decided(state, outcomes)


class _BeingFreed(Exception):
    """The request asks for a holding whose release is being written: ask again after it."""


@dataclass
class _Waiting:
    request: Request
    answer: asyncio.Future[Grant] = field(default_factory=asyncio.Future)


def _apply_if_unchanged(
    decided_on: slots.SlotPool, decided: slots.SlotPool, fresh: Instance
) -> Instance | None:
    """Write `decided` only over the exact state it was decided on; else write nothing."""
    if view(fresh) != decided_on:
        return None
    return with_usage(fresh, decided.usage)


class GroupCommit:
    """The queue of one node's Allocates and the task that decides and writes them."""

    def __init__(
        self,
        cache: InstanceCache,
        node: str,
        allocations: Allocations,
        write_timeout: float,
        metrics: AgentMetrics,
    ) -> None:
        self._cache = cache
        self._metrics = metrics
        self._node = node
        self._allocations = allocations
        self._write_timeout = write_timeout
        self._queue: list[_Waiting] = []
        self._writer: asyncio.Task[None] | None = None
        self.batches = 0
        """Batches decided so far (a measure of how much was grouped)."""

    @property
    def queued(self) -> int:
        """Requests waiting to be taken into a batch."""
        return len(self._queue)

    async def submit(self, request: Request) -> Grant:
        """Queue `request` and wait for its grant; raises its refusal or the write's error."""
        while True:
            await self._allocations.until_unfenced(request.holdings)
            waiting = _Waiting(request)
            self._queue.append(waiting)
            if self._writer is None or self._writer.done():
                self._writer = asyncio.create_task(self._drain(), name=f"allocations {self._node}")
            try:
                return await waiting.answer
            except _BeingFreed:
                continue

    async def close(self) -> None:
        """Stop deciding (the agent stops); waiting Allocates are cancelled."""
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
        for waiting in self._queue:
            waiting.answer.cancel()

    async def _drain(self) -> None:
        while self._queue:
            async with self._allocations.lock:
                batch = self._take()
                if not batch:
                    continue
                self.batches += 1
                self._metrics.allocate_batches.inc()
                try:
                    async with asyncio.timeout(self._write_timeout) as deadline:
                        await self._commit(batch, deadline)
                except Exception as error:  # every request of the batch fails with it
                    for waiting in batch:
                        if not waiting.answer.done():
                            waiting.answer.set_exception(error)
                except asyncio.CancelledError:
                    for waiting in batch:
                        waiting.answer.cancel()
                    raise

    def _take(self) -> list[_Waiting]:
        """Empty the queue: the requests still waiting, less those asking for a holding being
        freed (told to ask again once it is). Under the lock."""
        taken = [w for w in self._queue if not w.answer.done()]
        self._queue.clear()
        for waiting in taken:
            if self._allocations.fenced(waiting.request.holdings):
                waiting.answer.set_exception(_BeingFreed())
        return [w for w in taken if not w.answer.done()]

    async def _commit(self, batch: list[_Waiting], deadline: asyncio.Timeout) -> None:
        """Decide `batch` and write it, deciding again until a round's writes all land.

        A round decided again takes in the requests queued meanwhile (`batch` grows): it
        writes again anyway, and a burst whose first requests started a batch alone would
        otherwise write every Instance once more in the next batch, each write followed by
        every node that sees the Instance. The batch then has the write timeout from the
        latest join on, so that it does not give up on a request before the request's own
        deadline."""
        held_before: set[slots.Holding] = set()
        seen: set[Key] = set()
        while True:
            requests = [w.request for w in batch]
            keys = {key for request in requests for key in request.reads()}
            base = {
                key: view(instance)
                for key in keys
                if (instance := self._cache.get(*key)) is not None
            }
            # What this node held before the batch wrote anything: an Instance first read in
            # a later round was not written by this batch.
            held_before |= slots.holdings((base[key] for key in base.keys() - seen), self._node)
            seen |= base.keys()
            decided = decide_batch(base, self._node, requests, held_before)
            if await self._write(base, decided.state):
                break
            joined = self._take()
            if joined:
                batch += joined
                deadline.reschedule(asyncio.get_running_loop().time() + self._write_timeout)
        for waiting, outcome in zip(batch, decided.outcomes, strict=True):
            if isinstance(outcome, Grant):
                self._allocations.granted(waiting.request.holdings)
                self._allocations.bound(outcome.bindings)
                if not waiting.answer.done():
                    waiting.answer.set_result(outcome)
            elif not waiting.answer.done():
                waiting.answer.set_exception(outcome)

    async def _write(self, base: State, state: State) -> bool:
        """Write every Instance whose usage was decided to change, one after another; False
        when one had changed meanwhile (decide again: what was written before it is held).

        In sequence rather than all at once: nodes deciding on the same Instances at the same
        time would otherwise meet on every one of them in every round, and each meeting is a
        409 and another round. Each node starts at its own place in the order, so the nodes
        of a burst spread over the Instances instead of all queueing for the first one.
        """
        changed = sorted(key for key, decided in state.items() if decided.usage != base[key].usage)
        start = zlib.crc32(self._node.encode()) % len(changed) if changed else 0
        for key in changed[start:] + changed[:start]:
            if not await self._write_one(key, base[key], state[key]):
                return False
        return True

    async def _write_one(
        self, key: Key, decided_on: slots.SlotPool, decided: slots.SlotPool
    ) -> bool:
        write = functools.partial(_apply_if_unchanged, decided_on, decided)
        stored = await self._cache.update(*key, write)
        return stored is not None and view(stored).usage == decided.usage
