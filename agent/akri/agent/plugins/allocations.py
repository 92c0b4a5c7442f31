"""What this node's Allocates granted, and how they are ordered against reclaiming.

The kubelet records a container's devices only after Allocate returns, and PodResources shows
them only then. Allocate holds `lock` while it decides and writes and notes what it granted;
the reclaimer holds it while it decides what to free and counts a grant as a use at the time
of the grant. A slot the kubelet was just given is therefore never freed before the kubelet
could report it, and one it never recorded (its Allocate timed out) is freed like any unused one.

The reclaimer's write is not made under `lock`: on a slow API it would hold up every Allocate
of the node, and a deadline short enough for them would cut the write every time, so that the
slot is never freed. Instead the holdings it frees are fenced (`fence`) until the API has
answered the write: an Allocate asking for one of them waits and is then decided on the
written state (the slot free, to be taken again with a write), while every other Allocate goes
on. A write cut before an answer may still land, so its holdings stay fenced until the next
round decides on them again.

It also remembers which slot each configuration-level virtual device was bound to: only
`deviceUsage` says so, and when that record is lost the slot must still be found again for
the container using it (docs/design.md §5.5).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Iterable, Mapping

from akri.slot_sync import SlotRef
from akri.slots import Holding


class Allocations:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.lock = asyncio.Lock()
        self._clock = clock
        self._granted: dict[Holding, float] = {}
        self._bindings: dict[Holding, SlotRef] = {}
        self._fenced: set[Holding] = set()
        self._lifted = asyncio.Event()

    def granted(self, holdings: Iterable[Holding]) -> None:
        """Allocate gave these to the kubelet just now (re-offers included)."""
        now = self._clock()
        self._granted.update(dict.fromkeys(holdings, now))

    def recent(self, seconds: float) -> dict[Holding, float]:
        """When each holding was last granted, for grants in the last `seconds` (older ones are
        forgotten)."""
        cutoff = self._clock() - seconds
        self._granted = {h: t for h, t in self._granted.items() if t >= cutoff}
        return dict(self._granted)

    def bound(self, bindings: Mapping[Holding, SlotRef]) -> None:
        """These holdings are recorded in these slots (by an Allocate, or as the cache shows)."""
        self._bindings.update(bindings)

    def bindings(self, keep: Collection[Holding] | None = None) -> dict[Holding, SlotRef]:
        """The remembered slot of every holding, after forgetting those not in `keep`."""
        if keep is not None:
            self._bindings = {h: s for h, s in self._bindings.items() if h in keep}
        return dict(self._bindings)

    def fence(self, holdings: Collection[Holding]) -> None:
        """From now until a later call leaves them out, Allocates of `holdings` wait: their
        release is being written, or was sent without an answer and may still land (widened
        only under `lock`, after the decision to free them)."""
        lifted = self._fenced - set(holdings)
        self._fenced = set(holdings)
        if lifted:
            self._lifted.set()
            self._lifted = asyncio.Event()

    def fenced(self, holdings: Collection[Holding]) -> bool:
        """Whether one of `holdings` is fenced (decide under `lock`)."""
        return not self._fenced.isdisjoint(holdings)

    async def until_unfenced(self, holdings: Collection[Holding]) -> None:
        while self.fenced(holdings):
            await self._lifted.wait()
