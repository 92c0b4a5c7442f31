"""The kubelet's DRA manager for one simulated node: DRA plugins registered through the plugin
watcher, and ResourceClaims prepared before a pod's containers start and unprepared after.

Rules, each from the kubelet source:
- Registration (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, RegisterPlugin and
  validateSupportedServices): `supported_versions` lists gRPC services; an empty list is
  refused; one endpoint cannot be registered twice for a driver; of several plugins of one
  driver the newest is used. The health stream `NodeWatchResources` is opened at
  registration and opened again 5 s after it fails or ends (wait.UntilWithContext).
- Calls on a plugin have a 45 s deadline (defaultClientCallTimeout).
- Prepare (pkg/kubelet/cm/dra/manager.go, prepareResources): the pod's claims are its
  `spec.resourceClaims` (named, or made from a template and named in
  `status.resourceClaimStatuses`) and the scheduler's extended-resource claim
  (`status.extendedResourceClaimStatus`); each is read from the API and must list the pod in
  `reservedFor` and be allocated; every driver of its allocation must be registered. Only then
  is the pod added to each claim's record; claims already prepared are not sent again; the rest
  go to NodePrepareResources in one call per driver; an error for any claim, or a claim
  missing from the answer, fails the pod's preparation (it is tried again later).
- Containers get the CDI ids of the claim requests they use (GetResources): for
  `resources.claims` entries the named request, or every request when none is named; for
  extended resources the requests the scheduler mapped to the container.
- Unprepare (unprepareResources, reconcileLoop): when a pod is no longer active it leaves its
  claims' records; a claim no pod uses any more is sent to NodeUnprepareResources and
  forgotten; a failure is retried at the next pass.

Differences, on purpose: the claim records are kept in memory (a kubelet restart here is
`Kubelet.restart()`, which keeps them, as the real checkpoint does); only the `v1.DRAPlugin`
service is spoken (a real kubelet also speaks v1beta1); health is recorded here, not shown in
pod status (`allocatedResourcesStatus`); a driver whose last plugin deregisters keeps its
ResourceSlices (a real kubelet deletes them after a grace period unless it comes back).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import grpc

from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.dra.v1.api_pb2_grpc import DRAPluginStub
from akri.proto.dra.v1.constants import DRA_PLUGIN_SERVICE
from akri.proto.drahealth.v1alpha1 import api_pb2 as health
from akri.proto.drahealth.v1alpha1.api_pb2_grpc import DRAResourceHealthStub
from akri.sim.kubelet import rpc
from akri.sim.kubelet.plugin_watcher import RegistrationRefused

if TYPE_CHECKING:
    from akri.proto.dra.v1.api_pb2_grpc import DRAPluginAsyncStub
    from akri.proto.drahealth.v1alpha1.api_pb2_grpc import DRAResourceHealthAsyncStub

log = logging.getLogger(__name__)

Object = Mapping[str, Any]
CALL_TIMEOUT_S: Final = 45.0
_CUT: Final = "the plugin's connection closed during the call"
HEALTH_RETRY_S: Final = 5.0


class PrepareError(Exception):
    """The pod's claims cannot be prepared now; the kubelet tries again later."""


@dataclass(frozen=True)
class PreparedDevice:
    driver: str
    pool: str
    device: str
    request_names: tuple[str, ...]
    cdi_device_ids: tuple[str, ...]
    share_id: str | None = None


@dataclass
class ClaimInfo:
    """The kubelet's record of one claim on this node (claiminfo.go)."""

    namespace: str
    name: str
    uid: str
    drivers: frozenset[str]
    pods: set[str] = field(default_factory=set)
    prepared: bool = False
    devices: list[PreparedDevice] = field(default_factory=list)

    def cdi_ids(self, request: str) -> list[str]:
        """CDI ids of the devices serving `request` (all of them for "")."""
        return [
            cdi
            for device in self.devices
            if not request or not device.request_names or request in device.request_names
            for cdi in device.cdi_device_ids
        ]


@dataclass
class _Plugin:
    driver: str
    endpoint: str
    channel: grpc.aio.Channel
    health: asyncio.Task[None] | None = None


def claim_names(pod: Object) -> list[tuple[str | None, str]]:
    """(pod claim name, ResourceClaim name) of every claim the pod uses that exists by now;
    the extended-resource claim has no pod claim name."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    generated = {
        s.get("name"): s.get("resourceClaimName") for s in status.get("resourceClaimStatuses") or []
    }
    names: list[tuple[str | None, str]] = []
    for entry in spec.get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if name:
            names.append((entry.get("name"), str(name)))
    extended = (status.get("extendedResourceClaimStatus") or {}).get("resourceClaimName")
    if extended:
        names.append((None, str(extended)))
    return names


def uses_claims(pod: Object) -> bool:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    return bool(spec.get("resourceClaims") or status.get("extendedResourceClaimStatus"))


def _drivers(claim: Object) -> frozenset[str]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return frozenset(str(r["driver"]) for r in results)


class DraManager:
    """The plugin handler for type `DRAPlugin` and the node's claim records."""

    def __init__(
        self, on_change: Callable[[], None] = lambda: None, call_timeout: float = CALL_TIMEOUT_S
    ) -> None:
        self._on_change = on_change
        self._call_timeout = call_timeout
        self._plugins: dict[str, list[_Plugin]] = {}
        self.claims: dict[tuple[str, str], ClaimInfo] = {}
        """(namespace, name) -> the record; survives `shutdown` as the checkpoint would."""
        self.health: dict[tuple[str, str, str], tuple[str, str]] = {}
        """(driver, pool, device) -> (HEALTHY|UNHEALTHY|UNKNOWN, message), as last streamed."""
        self.calls: dict[str, int] = {"prepare": 0, "unprepare": 0}
        """NodePrepareResources and NodeUnprepareResources calls made (tests count them)."""

    # --- plugin handler -------------------------------------------------------------------

    def validate(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        if not versions:
            raise RegistrationRefused(
                f"invalid supported gRPC versions of DRA driver plugin {name} at endpoint "
                f"{endpoint}: empty list of supported gRPC services (aka supported versions)"
            )
        if DRA_PLUGIN_SERVICE not in versions:
            raise RegistrationRefused(
                f"DRA driver plugin {name} at endpoint {endpoint} offers none of the "
                f"services this kubelet speaks ({DRA_PLUGIN_SERVICE}): {list(versions)}"
            )

    async def register(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        plugins = self._plugins.setdefault(name, [])
        if any(p.endpoint == endpoint for p in plugins):
            raise RegistrationRefused(
                f"endpoint {endpoint} already registered for DRA driver plugin {name}"
            )
        plugin = _Plugin(name, endpoint, grpc.aio.insecure_channel(f"unix://{endpoint}"))
        plugin.health = asyncio.create_task(self._watch_health(plugin), name=f"dra-health-{name}")
        plugins.append(plugin)
        self._on_change()

    async def deregister(self, name: str, endpoint: str) -> None:
        plugins = self._plugins.get(name, [])
        for plugin in [p for p in plugins if p.endpoint == endpoint]:
            plugins.remove(plugin)
            await _close(plugin)
        if not plugins:
            self._plugins.pop(name, None)
        self._on_change()

    async def shutdown(self) -> None:
        """The kubelet stops: connections go, claim records stay."""
        for plugins in self._plugins.values():
            for plugin in plugins:
                await _close(plugin)
        self._plugins.clear()

    def drivers(self) -> set[str]:
        """Drivers with a registered plugin."""
        return set(self._plugins)

    def _plugin(self, driver: str) -> _Plugin:
        plugins = self._plugins.get(driver)
        if not plugins:
            raise PrepareError(f"DRA driver {driver} is not registered")
        return plugins[-1]

    async def _watch_health(self, plugin: _Plugin) -> None:
        stub: DRAResourceHealthAsyncStub = DRAResourceHealthStub(plugin.channel)
        while True:
            try:
                async for answer in stub.NodeWatchResources(health.NodeWatchResourcesRequest()):
                    for device in answer.devices:
                        key = (plugin.driver, device.device.pool_name, device.device.device_name)
                        self.health[key] = (health.HealthStatus.Name(device.health), device.message)
                    self._on_change()
            except grpc.aio.AioRpcError as error:
                log.debug("health stream of %s ended: %s", plugin.driver, error.code())
            await asyncio.sleep(HEALTH_RETRY_S)

    # --- claims -----------------------------------------------------------------------------

    async def prepare(self, pod: Object, claims: Iterable[Object]) -> None:
        """Prepare the pod's `claims` (read from the API by the caller); PrepareError when it
        cannot be done now."""
        uid = str(pod["metadata"]["uid"])
        checked = []
        for claim in claims:
            metadata = claim["metadata"]
            name = f"{metadata['namespace']}/{metadata['name']}"
            reserved = (claim.get("status") or {}).get("reservedFor") or []
            if not any(r.get("uid") == uid for r in reserved):
                raise PrepareError(
                    f"pod {pod['metadata']['name']} ({uid}) is not allowed to use ResourceClaim "
                    f"{metadata['name']} ({metadata.get('uid')})"
                )
            if not (claim.get("status") or {}).get("allocation"):
                raise PrepareError(f"ResourceClaim {name} is not allocated")
            drivers = _drivers(claim)
            for driver in sorted(drivers):
                self._plugin(driver)
            checked.append((claim, drivers))
        batches: dict[str, list[ClaimInfo]] = {}
        for claim, drivers in checked:
            metadata = claim["metadata"]
            key = (str(metadata["namespace"]), str(metadata["name"]))
            info = self.claims.get(key)
            if info is None:
                info = self.claims[key] = ClaimInfo(*key, str(metadata["uid"]), drivers)
            elif info.uid != metadata["uid"]:
                raise PrepareError(
                    f"old ResourceClaim with same name {key[1]} and different UID {info.uid} "
                    "still exists (previous pod force-deleted?!)"
                )
            info.pods.add(uid)
            if not info.prepared:
                for driver in sorted(info.drivers):
                    batches.setdefault(driver, []).append(info)
        for driver, infos in batches.items():
            await self._prepare_batch(driver, infos)
        self._on_change()

    async def _prepare_batch(self, driver: str, infos: list[ClaimInfo]) -> None:
        stub: DRAPluginAsyncStub = DRAPluginStub(self._plugin(driver).channel)
        request = dra.NodePrepareResourcesRequest(
            claims=[dra.Claim(namespace=i.namespace, uid=i.uid, name=i.name) for i in infos]
        )
        self.calls["prepare"] += 1
        try:
            response = await rpc.answer(
                stub.NodePrepareResources(request, timeout=self._call_timeout)
            )
        except grpc.aio.AioRpcError as error:
            raise PrepareError(f"NodePrepareResources: {error.details()}") from None
        except rpc.ChannelClosed:
            raise PrepareError(f"NodePrepareResources: {_CUT}") from None
        by_uid = {info.uid: info for info in infos}
        for claim_uid, answer in response.claims.items():
            info = by_uid.get(claim_uid)
            if info is None:
                raise PrepareError(
                    f"NodePrepareResources returned result for unknown claim UID {claim_uid}"
                )
            if answer.error:
                raise PrepareError(
                    f"NodePrepareResources failed for ResourceClaim {info.name}: {answer.error}"
                )
            info.devices = [
                PreparedDevice(
                    driver,
                    d.pool_name,
                    d.device_name,
                    tuple(d.request_names),
                    tuple(d.cdi_device_ids),
                    d.share_id if d.HasField("share_id") else None,
                )
                for d in answer.devices
            ]
        if unfinished := len(infos) - len(response.claims):
            raise PrepareError(f"NodePrepareResources skipped {unfinished} ResourceClaims")
        for info in infos:
            info.prepared = True

    def cdi_ids(self, pod: Object, container: Object) -> list[str]:
        """The CDI ids the runtime gives `container` of the prepared `pod`."""
        namespace = str(pod["metadata"]["namespace"])
        wanted: dict[str, list[str]] = {}
        names = dict(claim_names(pod))
        for entry in (container.get("resources") or {}).get("claims") or []:
            claim = names.get(entry.get("name"))
            if claim is not None:
                wanted.setdefault(claim, []).append(str(entry.get("request") or ""))
        extended = ((pod.get("status") or {}).get("extendedResourceClaimStatus")) or {}
        requested = _requested(container)
        for mapping in extended.get("requestMappings") or []:
            if mapping.get("containerName") == container["name"] and (
                mapping.get("resourceName") in requested
            ):
                wanted.setdefault(extended["resourceClaimName"], []).append(mapping["requestName"])
        ids: list[str] = []
        for claim, requests in wanted.items():
            info = self.claims.get((namespace, claim))
            if info is None:
                raise PrepareError(f"unable to get claim info for ResourceClaim {claim}")
            ids.extend(cdi for request in requests for cdi in info.cdi_ids(request))
        return ids

    async def reconcile(self, active: set[str]) -> None:
        """Unprepare what only inactive pods used; failures stay for the next pass."""
        batches: dict[str, list[ClaimInfo]] = {}
        for info in self.claims.values():
            info.pods &= active
            if not info.pods:
                for driver in sorted(info.drivers):
                    batches.setdefault(driver, []).append(info)
        done: set[str] = set()
        for driver, infos in batches.items():
            try:
                done |= await self._unprepare_batch(driver, infos)
            except (PrepareError, grpc.aio.AioRpcError) as error:
                reason = str(error)  # not the error: its traceback holds the channel
                log.info("unpreparing claims of driver %s failed, will retry: %s", driver, reason)
        gone = [key for key, info in self.claims.items() if not info.pods and info.uid in done]
        for key in gone:
            del self.claims[key]
        if gone:
            self._on_change()

    async def _unprepare_batch(self, driver: str, infos: list[ClaimInfo]) -> set[str]:
        """UIDs of the claims the driver unprepared."""
        stub: DRAPluginAsyncStub = DRAPluginStub(self._plugin(driver).channel)
        request = dra.NodeUnprepareResourcesRequest(
            claims=[dra.Claim(namespace=i.namespace, uid=i.uid, name=i.name) for i in infos]
        )
        self.calls["unprepare"] += 1
        try:
            response = await rpc.answer(
                stub.NodeUnprepareResources(request, timeout=self._call_timeout)
            )
        except rpc.ChannelClosed:
            raise PrepareError(f"NodeUnprepareResources: {_CUT}") from None
        done = set()
        for claim_uid, answer in response.claims.items():
            if answer.error:
                log.info("NodeUnprepareResources failed for claim %s: %s", claim_uid, answer.error)
            else:
                done.add(claim_uid)
        return done


def _requested(container: Object) -> set[str]:
    resources = container.get("resources") or {}
    wanted = {**(resources.get("requests") or {}), **(resources.get("limits") or {})}
    return {name for name, value in wanted.items() if str(value) not in ("0", "")}


async def _close(plugin: _Plugin) -> None:
    if plugin.health is not None:
        plugin.health.cancel()
        # gather, not a suppressed CancelledError: a cancellation of the caller must pass
        await asyncio.gather(plugin.health, return_exceptions=True)
    await plugin.channel.close()
