"""Where a Pod's ResourceClaims fit, by the rules of the Kubernetes structured-parameters
allocator that akri-py uses (kubernetes/dynamic-resource-allocation, structured/internal/
experimental/allocator_experimental.go and pools.go). Pure functions over plain API objects.

Covered: pools as the newest complete generation of their slices (pools.go GatherPools); the
slices and devices a node can reach (nodeName, allNodes, nodeSelector, perDeviceNodeSelection);
class and request CEL selectors (a runtime error fails the allocation, as selectorsMatch does);
`ExactCount` and `All` modes; device taints against request tolerations; devices in use by
other claims unless `allowMultipleAllocations`; consumable capacity with request policies
(CmpRequestOverCapacity: a missing request takes the policy default, rounded up to a valid
value, or the whole capacity without a policy); `matchAttribute` / `distinctAttribute`
constraints; one request never gets one device twice (allocateOne's start location).
Not covered (akri-py uses none): firstAvailable, adminAccess, partitionable counters, binding
conditions.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any

import celpy
from celpy.adapter import json_to_cel

from akri.sim.scheduling import node_selector_matches

Object = Mapping[str, Any]
DeviceKey = tuple[str, str, str]  # driver, pool, device


class AllocationError(Exception):
    """The claim cannot be allocated anywhere: a bad selector or class (not just no room)."""


@dataclass(frozen=True)
class Candidate:
    driver: str
    pool: str
    device: Object
    node_selector: Object | None
    """The nodes the device is reachable from (None: every node)."""
    node_name: str | None = None
    """The one node of a node-local device."""

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, str(self.device["name"]))


def _generation(item: Object) -> int:
    return int(item["spec"]["pool"].get("generation", 0))


def complete_pools(slices: Iterable[Object]) -> list[list[Object]]:
    """Each pool's slices of its newest generation, for pools that have all of them."""
    pools: dict[tuple[str, str], list[Object]] = {}
    for item in slices:
        pools.setdefault((item["spec"]["driver"], item["spec"]["pool"]["name"]), []).append(item)
    result = []
    for key in sorted(pools):
        newest = max(_generation(s) for s in pools[key])
        current = [s for s in pools[key] if _generation(s) == newest]
        if len(current) == int(current[0]["spec"]["pool"].get("resourceSliceCount", 1)):
            result.append(sorted(current, key=lambda s: str(s["metadata"]["name"])))
    return result


def _name_selector(node: str) -> Object:
    term = {"key": "metadata.name", "operator": "In", "values": [node]}
    return {"nodeSelectorTerms": [{"matchFields": [term]}]}


def _reach(holder: Object, node: Object) -> tuple[bool, Object | None, str | None]:
    """Whether `node` reaches a slice spec or a device, the nodes it is reachable from, and
    its one node when it is node-local."""
    name = node["metadata"]["name"]
    if holder.get("nodeName"):
        local = str(holder["nodeName"])
        return local == name, _name_selector(local), local
    if holder.get("allNodes"):
        return True, None, None
    if holder.get("nodeSelector"):
        return node_selector_matches(holder["nodeSelector"], node), holder["nodeSelector"], None
    return False, None, None


def candidates(slices: Iterable[Object], node: Object) -> list[Candidate]:
    """Every device of a complete pool that `node` can reach, in allocator order."""
    found = []
    for pool in complete_pools(slices):
        for item in pool:
            spec = item["spec"]
            per_device = bool(spec.get("perDeviceNodeSelection"))
            reach = (False, None, None) if per_device else _reach(spec, node)
            for device in spec.get("devices") or []:
                reached, selector, local = _reach(device, node) if per_device else reach
                if reached:
                    found.append(
                        Candidate(spec["driver"], spec["pool"]["name"], device, selector, local)
                    )
    return found


def _quantity(value: Any) -> Decimal:
    """A Quantity as a number (plain and decimal-suffixed forms, as akri-py writes them)."""
    text = str(value)
    for suffix, factor in (("k", 1000), ("m", Decimal("0.001"))):
        if text.endswith(suffix):
            return Decimal(text[: -len(suffix)]) * factor
    return Decimal(text)


def _format(value: Decimal) -> str:
    return str(value.normalize()) if value != value.to_integral() else str(int(value))


def consumption(device: Object, requested: Mapping[str, Any]) -> dict[str, Decimal] | None:
    """What one allocation of a multi-allocation device consumes of each capacity, or None
    when a request is not valid for its policy (CmpRequestOverCapacity)."""
    result = {}
    for name, capacity in (device.get("capacity") or {}).items():
        policy = capacity.get("requestPolicy")
        total = _quantity(capacity["value"])
        if name in requested:
            amount = _quantity(requested[name])
        elif policy is not None and policy.get("default") is not None:
            amount = _quantity(policy["default"])
        else:
            amount = total
        if policy is not None:
            valid = policy.get("validValues")
            ranged = policy.get("validRange")
            if valid:
                bigger = sorted(v for v in map(_quantity, valid) if v >= amount)
                if not bigger:
                    return None
                amount = bigger[0]
            elif ranged:
                low = _quantity(ranged.get("min", "0"))
                amount = max(amount, low)
                if ranged.get("step") is not None:
                    step = _quantity(ranged["step"])
                    steps = math.ceil((amount - low) / step)  # round up to a valid step
                    amount = low + steps * step
                if ranged.get("max") is not None and amount > _quantity(ranged["max"]):
                    return None
        result[name] = amount
    return result


@dataclass
class InUse:
    """Devices other claims hold: exclusively, or as consumed capacity."""

    exclusive: set[DeviceKey] = field(default_factory=set)
    consumed: dict[DeviceKey, dict[str, Decimal]] = field(default_factory=dict)

    @classmethod
    def of(cls, claims: Iterable[Object]) -> InUse:
        in_use = cls()
        for claim in claims:
            allocation = (claim.get("status") or {}).get("allocation") or {}
            for result in (allocation.get("devices") or {}).get("results") or []:
                key = (result["driver"], result["pool"], result["device"])
                if result.get("shareID") is None:
                    in_use.exclusive.add(key)
                else:
                    taken = in_use.consumed.setdefault(key, {})
                    for name, value in (result.get("consumedCapacity") or {}).items():
                        taken[name] = taken.get(name, Decimal(0)) + _quantity(value)
        return in_use

    def fits(self, candidate: Candidate, amount: Mapping[str, Decimal]) -> bool:
        taken = self.consumed.get(candidate.key, {})
        capacity = candidate.device.get("capacity") or {}
        return all(
            taken.get(name, Decimal(0)) + value <= _quantity(capacity[name]["value"])
            for name, value in amount.items()
        )


@lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    environment = celpy.Environment()
    return environment.program(environment.compile(expression))


def _cel_device(candidate: Candidate) -> Any:
    device = candidate.device
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, _, identifier = name.rpartition("/")
        attributes.setdefault(domain or candidate.driver, {})[identifier] = next(
            iter(value.values())
        )
    capacity: dict[str, dict[str, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, _, identifier = name.rpartition("/")
        capacity.setdefault(domain or candidate.driver, {})[identifier] = str(value["value"])
    return json_to_cel(
        {
            "driver": candidate.driver,
            "attributes": attributes,
            "capacity": capacity,
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations")),
        }
    )


def selected(candidate: Candidate, selectors: Sequence[Object]) -> bool:
    """Whether every CEL selector accepts the device; a runtime error fails the allocation."""
    for selector in selectors:
        expression = (selector.get("cel") or {}).get("expression", "")
        try:
            result = _program(expression).evaluate({"device": _cel_device(candidate)})
        except Exception as error:  # celpy raises its own evaluation and parse errors
            raise AllocationError(f"CEL error in {expression!r}: {error}") from error
        if isinstance(result, Exception):
            raise AllocationError(f"CEL error in {expression!r}: {result}")
        if not bool(result):
            return False
    return True


def _tolerated(taint: Object, tolerations: Sequence[Object]) -> bool:
    for toleration in tolerations:
        if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
            continue
        if toleration.get("operator") == "Exists":
            if not toleration.get("key") or toleration["key"] == taint.get("key"):
                return True
        elif toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
            "value", ""
        ):
            return True
    return False


@dataclass(frozen=True)
class _Request:
    name: str
    count: int | None  # None: All
    selectors: tuple[Object, ...]
    tolerations: tuple[Object, ...]
    capacity: Mapping[str, Any]


def _requests(claim: Object, classes: Mapping[str, Object]) -> list[_Request]:
    result = []
    for request in (claim.get("spec") or {}).get("devices", {}).get("requests") or []:
        exactly = request.get("exactly")
        if exactly is None:
            raise AllocationError(f"request {request.get('name')}: only `exactly` is supported")
        device_class = classes.get(exactly.get("deviceClassName", ""))
        if device_class is None:
            raise AllocationError(f"device class {exactly.get('deviceClassName')} does not exist")
        mode = exactly.get("allocationMode", "ExactCount")
        result.append(
            _Request(
                request["name"],
                None if mode == "All" else int(exactly.get("count", 1)),
                (*(device_class["spec"].get("selectors") or []), *(exactly.get("selectors") or [])),
                tuple(exactly.get("tolerations") or []),
                (exactly.get("capacity") or {}).get("requests") or {},
            )
        )
    return result


@dataclass
class Allocation:
    """A claim's `status.allocation`, decided for one node."""

    results: list[dict[str, Any]]
    node_selector: Object | None

    def status(self, now: str) -> dict[str, Any]:
        allocation: dict[str, Any] = {
            "devices": {"results": self.results},
            "allocationTimestamp": now,
        }
        if self.node_selector is not None:
            allocation["nodeSelector"] = self.node_selector
        return allocation


def _attribute(candidate: Candidate, name: str) -> Any:
    attributes = candidate.device.get("attributes") or {}
    domain, _, identifier = name.partition("/")
    value = attributes.get(name)
    if value is None and domain == candidate.driver:
        value = attributes.get(identifier)
    return None if value is None else next(iter(value.values()))


def _constraints_hold(claim: Object, chosen: Sequence[_Chosen]) -> bool:
    for constraint in (claim.get("spec") or {}).get("devices", {}).get("constraints") or []:
        names = set(constraint.get("requests") or [])
        picked = [c.candidate for c in chosen if not names or c.request in names]
        if constraint.get("matchAttribute"):
            values = [_attribute(c, constraint["matchAttribute"]) for c in picked]
            if None in values or len(set(values)) > 1:
                return False
        if constraint.get("distinctAttribute"):
            values = [_attribute(c, constraint["distinctAttribute"]) for c in picked]
            if None in values or len(set(values)) != len(values):
                return False
    return True


def allocate(
    claim: Object, classes: Mapping[str, Object], devices: Sequence[Candidate], in_use: InUse
) -> Allocation | None:
    """The claim's allocation from `devices` (those the node reaches), or None when it does
    not fit; `in_use` is updated with what the allocation takes, so that several claims of one
    Pod are decided together. Raises AllocationError for claims that can never fit."""
    requests = _requests(claim, classes)
    chosen: list[_Chosen] = []

    def options(request: _Request, start: int) -> Iterable[tuple[int, Candidate, Amount]]:
        for position in range(start, len(devices)):
            candidate = devices[position]
            usable, amount = _usable(request, candidate, in_use)
            if usable and selected(candidate, request.selectors):
                yield position, candidate, amount

    def search(index: int, start: int, left: int) -> bool:
        if index == len(requests):
            return _constraints_hold(claim, chosen)
        request = requests[index]
        if left == 0:
            return search(index + 1, 0, _count(index + 1))
        for position, candidate, amount in list(options(request, start)):
            _take(in_use, candidate, amount)
            chosen.append(_Chosen(request.name, candidate, amount))
            if search(index, position + 1, left - 1):
                return True
            chosen.pop()
            _give_back(in_use, candidate, amount)
        return False

    def _count(index: int) -> int:
        if index >= len(requests):
            return 0
        request = requests[index]
        if request.count is not None:
            return request.count
        # All: every device that is usable now, at least one (allocateOne, doAllDevices).
        return len(list(options(request, 0))) or -1

    if not requests or not search(0, 0, _count(0)):
        return None
    results = []
    for item in chosen:
        result: dict[str, Any] = {
            "request": item.request,
            "driver": item.candidate.driver,
            "pool": item.candidate.pool,
            "device": item.candidate.device["name"],
        }
        if item.amount is not None:
            result["shareID"] = str(uuid.uuid4())
            result["consumedCapacity"] = {name: _format(v) for name, v in item.amount.items()}
        results.append(result)
    return Allocation(results, allocation_node_selector([c.candidate for c in chosen]))


def allocation_node_selector(devices: Sequence[Candidate]) -> Object | None:
    """The node selector of an allocation of `devices`, as the allocator's createNodeSelector
    builds it: a node-local device pins it to its node; otherwise the requirements of every
    device's (one-term) selector are ANDed in one term, each once; None when no device limits
    the nodes. A selector of several terms is an error there (validation keeps them out)."""
    fields: list[Object] = []
    expressions: list[Object] = []
    for device in devices:
        selector = device.node_selector
        if selector is None:
            continue
        if device.node_name is not None:
            return selector
        terms = selector.get("nodeSelectorTerms") or []
        if len(terms) > 1:
            raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
        for term in terms:
            fields += [r for r in term.get("matchFields") or [] if r not in fields]
            expressions += [r for r in term.get("matchExpressions") or [] if r not in expressions]
    merged = {"matchExpressions": expressions, "matchFields": fields}
    merged = {key: requirements for key, requirements in merged.items() if requirements}
    return {"nodeSelectorTerms": [merged]} if merged else None


Amount = dict[str, Decimal] | None
"""Capacity one allocation of a multi-allocation device consumes; None: exclusive use."""


@dataclass(frozen=True)
class _Chosen:
    request: str
    candidate: Candidate
    amount: Amount


def _usable(request: _Request, candidate: Candidate, in_use: InUse) -> tuple[bool, Amount]:
    """Whether the device is free for the request now, and what taking it consumes.

    A tainted device is skipped unless the request tolerates every taint of it (structured/
    internal/experimental/allocator_experimental.go, allocateDevice: `allTaintsTolerated`,
    checked before constraints; the toleration rules of resourceclaim.ToleratesTaint). Only new
    allocations look at taints: claims allocated before keep their device, and a NoSchedule
    taint evicts nothing (only NoExecute makes the eviction controller act).
    """
    taints = candidate.device.get("taints") or []
    if any(
        t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(t, request.tolerations)
        for t in taints
    ):
        return False, None
    if candidate.device.get("allowMultipleAllocations"):
        amount = consumption(candidate.device, request.capacity)
        return (amount is not None and in_use.fits(candidate, amount)), amount
    return candidate.key not in in_use.exclusive, None


def _take(in_use: InUse, candidate: Candidate, amount: Amount) -> None:
    if amount is None:
        in_use.exclusive.add(candidate.key)
        return
    taken = in_use.consumed.setdefault(candidate.key, {})
    for name, value in amount.items():
        taken[name] = taken.get(name, Decimal(0)) + value


def _give_back(in_use: InUse, candidate: Candidate, amount: Amount) -> None:
    if amount is None:
        in_use.exclusive.discard(candidate.key)
        return
    taken = in_use.consumed[candidate.key]
    for name, value in amount.items():
        taken[name] -= value
