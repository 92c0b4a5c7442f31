"""How the kubelet chooses device ids for one container and one resource (pure, no I/O).

Order, as in the kubelet's device manager: ids handed back from the pod's init containers
first; then, if more are needed, ids the plugin prefers (when it offers GetPreferredAllocation)
among the healthy ids no one holds; then the remaining such ids in sorted order.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass

from akri.sim.kubelet.model import AllocationError


@dataclass(frozen=True)
class Selection:
    """A choice in progress: ids already fixed and the free ids the rest may come from."""

    resource: str
    size: int
    reused: tuple[str, ...]
    free: tuple[str, ...]

    @property
    def needs_more(self) -> bool:
        """Whether the plugin's preference can still matter."""
        return len(self.reused) < self.size

    @property
    def offered(self) -> tuple[str, ...]:
        """`available_deviceIDs` of a preferred-allocation request: free plus must-include."""
        return tuple(sorted({*self.free, *self.reused}))

    def complete(self, preferred: Iterable[str] = ()) -> tuple[str, ...]:
        """Fill the selection: preferred free ids first, then the other free ids.

        `select` made sure enough free ids exist, so the result always has `size` ids.
        """
        chosen = list(self.reused)
        preferred_free = sorted(set(preferred) & set(self.free))
        for device_id in (*preferred_free, *self.free):
            if len(chosen) == self.size:
                break
            if device_id not in chosen:
                chosen.append(device_id)
        return tuple(sorted(chosen))


def select(
    resource: str, size: int, reusable: Set[str], healthy: Set[str], in_use: Set[str]
) -> Selection:
    """Start choosing `size` ids; raise AllocationError when too few healthy ids are free."""
    reused = tuple(sorted(reusable)[:size])
    if len(reused) == size:
        return Selection(resource, size, reused, free=())
    free = tuple(sorted(healthy - in_use - set(reused)))
    missing = size - len(reused)
    if len(free) < missing:
        raise AllocationError(
            f"requested number of devices unavailable for {resource}. "
            f"Requested: {missing}, Available: {len(free)}"
        )
    return Selection(resource, size, reused, free)
