"""docs/design.md §5.4, the worked example, as one table run in both allocation modes: the
same pods asking `akri.sh/<configuration>: N` (extended resources in both modes) or one slot of
Instance A (`akri.sh/<instance>: 1`, or a claim from A's ResourceClaimTemplate in DRA mode) are
admitted or left Pending alike. Each step waits for its outcome before the next, so the
allocator's choices are the same whatever the timing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from akri import naming
from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.sim.cluster import Cluster
from akri.sim.manifests import debug_echo_configuration, pod
from tests.dra.test_dra_end_to_end import claim_pod, published
from tests.sim.users import User
from tests.support import eventually

CFG = "cfg"
A = naming.instance_name(CFG, "foo0")
B = naming.instance_name(CFG, "foo1")
NODES = ("n", "m")
RUNS, WAITS = "Running", "Pending"

Step = tuple[str, str, str, int, str]
"""Pod, node, what it asks (the Configuration or Instance A), how many, what becomes of it."""

UNIQUE: list[Step] = [
    ("p1", "n", CFG, 2, RUNS),  # one slot of A and one of B
    ("p2", "m", A, 1, RUNS),  # A's other slot
    ("p3", "n", CFG, 3, WAITS),  # three distinct devices never fit
    ("p4", "n", A, 1, WAITS),  # A is full
    ("p5", "m", CFG, 1, RUNS),  # B's other slot
    ("p6", "m", CFG, 1, WAITS),  # every slot is taken
]
SLOTS: list[Step] = [
    ("p1", "n", CFG, 2, RUNS),  # two slots, maybe of one device
    ("p2", "m", CFG, 1, RUNS),
    ("p3", "n", CFG, 2, WAITS),  # one slot is left
    ("p4", "n", CFG, 1, RUNS),  # the last one
    ("p5", "m", CFG, 1, WAITS),
]


@pytest.fixture(params=[Mode.DEVICE_PLUGIN, Mode.DRA], ids=["device-plugin", "dra"])
async def cluster(socket_dir: Path, request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    async with Cluster(
        ["n", "m"], workdir=socket_dir, agents=True, controller=Tuning(), mode=request.param
    ) as running:
        yield running


def request_of(cluster: Cluster, name: str, node: str, what: str, count: int) -> dict[str, Any]:
    if what == A and cluster.mode is Mode.DRA:
        assert count == 1
        return claim_pod(name, node, A, template=True)
    return pod(name, node, what, count)


async def settled(user: User, cluster: Cluster, unique: bool) -> bool:
    """Every node offers what the slot pool allows now. DRA mode: both devices published for
    both nodes (and A's template made); the scheduler allocates from the claims themselves.
    Device-plugin mode: each node's plugins advertise exactly the slots the Instances' usage
    leaves it (docs/design.md §5.2, §5.3), so a node never admits on a stale view."""
    if cluster.mode is Mode.DRA:
        return await published(cluster) and await _template(user, A)
    found = [await user.instance(instance) for instance in (A, B)]
    if not all(found):
        return False
    usages = [dict(i["spec"].get("deviceUsage") or {}) for i in found if i]
    free = [sum(not holder for holder in usage.values()) for usage in usages]
    for node in NODES:
        offered = await user.allocatable(node)
        held = sum(
            h.startswith("C:") and h.endswith(f":{node}") for u in usages for h in u.values()
        )
        wanted = {
            naming.resource_name(instance): str(left + sum(h == node for h in usage.values()))
            for instance, usage, left in zip((A, B), usages, free, strict=True)
        }
        wanted[naming.resource_name(CFG)] = str(
            held + (sum(left > 0 for left in free) if unique else sum(free))
        )
        if any(offered.get(resource) != count for resource, count in wanted.items()):
            return False
    return True


async def _template(user: User, name: str) -> bool:
    found = await user.custom.list_namespaced_custom_object(
        "resource.k8s.io", "v1", "default", "resourceclaimtemplates"
    )
    return name in {t["metadata"]["name"] for t in found["items"]}


@pytest.mark.parametrize(
    ("unique", "steps"), [(True, UNIQUE), (False, SLOTS)], ids=["unique", "slots"]
)
async def test_worked_example_in_both_modes(
    cluster: Cluster, unique: bool, steps: list[Step]
) -> None:
    user = User(cluster)
    await user.apply(debug_echo_configuration(CFG, ["foo0", "foo1"], 2, uniqueDevices=unique))
    for name, node, what, count, outcome in steps:
        await eventually(lambda: settled(user, cluster, unique), "every node's offer to settle")
        await user.run(request_of(cluster, name, node, what, count))
        if outcome == RUNS:
            await user.wait_running(name)
        else:
            await eventually(_unschedulable(user, name), f"{name} to stay unschedulable")
            assert await user.phase(name) == WAITS
    for name, *_, outcome in steps:  # nothing admitted later by mistake
        assert await user.phase(name) == outcome, name


def _unschedulable(user: User, name: str) -> Callable[[], Awaitable[bool]]:
    """A FailedScheduling for want of room, not while its claim is still being made."""

    async def probe() -> bool:
        events = await user.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={name}"
        )
        return any(
            e.reason == "FailedScheduling" and not (e.message or "").startswith("waiting for")
            for e in events.items
        )

    return probe
