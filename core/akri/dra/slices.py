"""Pure: a pool of DRA devices as ResourceSlices, and the writes that bring the API to it.

Pools (docs/design.md §8a): a node's local devices of one Configuration form the pool
`<configuration>/node/<node>` (slices with `nodeName`, written by that node's agent); shared
devices form one pool `<configuration>/shared` for the cluster (slices with
`perDeviceNodeSelection`, written by the controller leader alone, so no two writers race).

The rules follow the kubelet plugin helper's slice controller
(k8s.io/dynamic-resource-allocation/resourceslice/resourceslicecontroller.go, syncPool): slices
of an older generation than the newest are obsolete; the generation is kept when the change is at
most one update of an existing slice (one write is atomic for the scheduler) and bumped otherwise;
every slice of a pool carries the pool's generation and slice count; nothing is written when the
stored slices already match.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from akri.dra.devices import API_VERSION, DRIVER
from akri.naming import digest, dns_label

JSON = dict[str, Any]

MAX_DEVICES_PER_SLICE = 64
"""resourceapi.ResourceSliceMaxDevicesWithTaintsOrConsumesCounters: the limit for slices whose
devices use taints or multiple allocations (128 otherwise); akri-py keeps to it always."""


def local_pool_name(configuration: str, node: str) -> str:
    return f"{configuration}/node/{node}"


_SHARED = "/shared"


def shared_pool_name(configuration: str) -> str:
    return f"{configuration}{_SHARED}"


def shared_pool_configuration(pool: str) -> str | None:
    """The Configuration whose shared pool `pool` is, or None for another pool."""
    return pool.removesuffix(_SHARED) if pool.endswith(_SHARED) else None


def slice_name(pool: str, index: int) -> str:
    """Deterministic, so a slice is found again by name and a duplicate create fails."""
    readable = dns_label(pool.replace("/", "-"), 48)
    return f"{readable}-{digest(pool)}-{index}"


@dataclass(frozen=True)
class Pool:
    """The devices one writer publishes under one pool name."""

    name: str
    node: str | None
    """`nodeName` of every slice; None for a shared pool with per-device node selection."""
    devices: list[JSON]
    labels: dict[str, str] = field(default_factory=dict)
    owner: JSON | None = None
    """An ownerReference for every slice (the Node of a local pool)."""

    def chunks(self) -> list[list[JSON]]:
        ordered = sorted(self.devices, key=lambda d: str(d["name"]))
        size = MAX_DEVICES_PER_SLICE
        return [ordered[i : i + size] for i in range(0, len(ordered), size)]


@dataclass
class Plan:
    """API writes, in order: deletes (name, resourceVersion), then updates, then creates."""

    deletes: list[tuple[str, str]] = field(default_factory=list)
    updates: list[JSON] = field(default_factory=list)
    creates: list[JSON] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.deletes or self.updates or self.creates)


def _without_time_added(devices: list[JSON]) -> list[JSON]:
    """Devices as compared: the API server stamps taints with `timeAdded`."""
    result = []
    for device in devices:
        if "taints" in device:
            device = {
                **device,
                "taints": [
                    {k: v for k, v in t.items() if k != "timeAdded"} for t in device["taints"]
                ],
            }
        result.append(device)
    return result


def _keep_time_added(desired: list[JSON], stored: list[JSON]) -> list[JSON]:
    """Desired devices with the `timeAdded` of taints that were already there."""
    added = {
        (d["name"], t.get("key"), t.get("effect")): t["timeAdded"]
        for d in stored
        for t in d.get("taints", [])
        if "timeAdded" in t
    }
    result = copy.deepcopy(desired)
    for device in result:
        for taint in device.get("taints", []):
            stamp = added.get((device["name"], taint.get("key"), taint.get("effect")))
            if stamp is not None:
                taint["timeAdded"] = stamp
    return result


def _spec(pool: Pool, generation: int, count: int, devices: list[JSON]) -> JSON:
    spec: JSON = {
        "driver": DRIVER,
        "pool": {"name": pool.name, "generation": generation, "resourceSliceCount": count},
        "devices": devices,
    }
    if pool.node is None:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = pool.node
    return spec


def _matches(stored: JSON, desired: JSON) -> bool:
    spec = stored.get("spec") or {}
    keys = ("driver", "pool", "nodeName", "perDeviceNodeSelection")
    if any(spec.get(k) != desired.get(k) for k in keys):
        return False
    return _without_time_added(spec.get("devices") or []) == _without_time_added(desired["devices"])


def plan(pool: Pool, stored: list[JSON]) -> Plan:
    """The writes that turn `stored` (the slices now in the API with this pool's name) into
    `pool`. Updates carry the stored resourceVersion, deletes precondition on it."""
    chunks = pool.chunks()
    generation = max((int(s["spec"]["pool"].get("generation", 0)) for s in stored), default=0)
    names = {slice_name(pool.name, i): i for i in range(len(chunks))}
    current: dict[int, JSON] = {}
    result = Plan()
    for item in sorted(stored, key=lambda s: str(s["metadata"]["name"])):
        meta = item["metadata"]
        index = names.get(meta["name"])
        fresh = int(item["spec"]["pool"].get("generation", 0)) == generation
        if fresh and index is not None and index not in current:
            current[index] = item
        else:
            result.deletes.append((meta["name"], meta.get("resourceVersion", "")))
    count = len(chunks)
    changed = [
        i
        for i, item in current.items()
        if not _matches(item, _spec(pool, generation, count, chunks[i]))
    ]
    new = [i for i in range(count) if i not in current]
    bump = generation == 0 or bool(new) or len(changed) > 1
    if bump:
        generation += 1
    for i in sorted(current):
        if not bump and i not in changed:
            continue
        item = current[i]
        devices = _keep_time_added(chunks[i], item["spec"].get("devices") or [])
        result.updates.append(_slice(pool, i, _spec(pool, generation, count, devices), item))
    for i in new:
        result.creates.append(_slice(pool, i, _spec(pool, generation, count, chunks[i]), None))
    return result


def _slice(pool: Pool, index: int, spec: JSON, stored: JSON | None) -> JSON:
    metadata: JSON = {"name": slice_name(pool.name, index), "labels": dict(pool.labels)}
    if pool.owner is not None:
        metadata["ownerReferences"] = [dict(pool.owner)]
    if stored is not None:
        metadata["resourceVersion"] = stored["metadata"].get("resourceVersion", "")
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": metadata,
        "spec": copy.deepcopy(spec),
    }
