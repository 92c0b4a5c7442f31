"""Pure: which Instances an allocated ResourceClaim holds on this node, and what the kubelet is
told about them.

The kubelet names a claim only (namespace, name, uid); the allocation is in the claim's
`status.allocation.devices.results`, each naming a driver, a pool and a device. The devices of
driver akri.sh are mapped back to Instances through the devices this node publishes or sees
(`akri.dra.devices.published_devices`, the same mapping the ResourceSlices come from).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from akri.agent.plugins.desired import ConfigurationLookup
from akri.api import Instance
from akri.dra.devices import DRIVER, published_devices
from akri.dra.slices import local_pool_name, shared_pool_name

JSON = dict[str, Any]
DeviceKey = tuple[str, str]
"""(pool, device name) as in an allocation result."""


class ClaimError(Exception):
    """This claim cannot be prepared on this node; the message goes back to the kubelet."""


@dataclass(frozen=True)
class KnownDevice:
    instance: Instance
    healthy: bool
    """False while the device is tainted (its Instance going away)."""


def device_index(
    instances: Iterable[Instance],
    configurations: ConfigurationLookup,
    node: str,
    allocated: Collection[str] = (),
) -> dict[DeviceKey, KnownDevice]:
    """Every DRA device of an Instance this node sees, by (pool, device name); with the slot
    devices named in `allocated` that a lowered capacity keeps offered only while a claim
    holds them (`akri.dra.devices.offered_slots`)."""
    index: dict[DeviceKey, KnownDevice] = {}
    for instance in instances:
        spec = instance.spec
        if node not in spec.nodes:
            continue
        namespace = instance.metadata.namespace or "default"
        configuration = configurations(namespace, spec.configuration_name)
        if configuration is None:
            continue
        name = spec.configuration_name
        pool = shared_pool_name(name) if spec.shared else local_pool_name(name, node)
        mapped = published_devices(
            instance, configuration, per_device_nodes=spec.shared, allocated=allocated
        )
        for device in mapped.devices:
            index[(pool, str(device["name"]))] = KnownDevice(instance, "taints" not in device)
    return index


@dataclass
class Request:
    """The devices one request of the claim got, in allocation order."""

    results: list[JSON] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)


def allocated_requests(
    claim: JSON, uid: str, index: Mapping[DeviceKey, KnownDevice]
) -> dict[str, Request]:
    """The claim's akri.sh devices by request name; ClaimError when it cannot be prepared."""
    metadata = claim.get("metadata") or {}
    if metadata.get("uid") != uid:
        raise ClaimError(
            f"ResourceClaim {metadata.get('namespace')}/{metadata.get('name')} has uid "
            f"{metadata.get('uid')}, not {uid}: it was deleted and made again"
        )
    allocation = (claim.get("status") or {}).get("allocation")
    if not allocation:
        raise ClaimError("the claim is not allocated")
    requests: dict[str, Request] = {}
    for result in (allocation.get("devices") or {}).get("results") or []:
        if result.get("driver") != DRIVER:
            continue
        key = (str(result.get("pool")), str(result.get("device")))
        known = index.get(key)
        if known is None:
            raise ClaimError(f"device {key[1]} of pool {key[0]} is not on this node (any more)")
        request = requests.setdefault(str(result.get("request")), Request())
        request.results.append(result)
        request.instances.append(known.instance)
    return requests
