"""The kubelet DRA plugin services: DRAPlugin (prepare/unprepare) and DRAResourceHealth.

Prepare reads the claim from the API (the kubelet sends only its name and uid), maps its
akri.sh devices to Instances, writes the claim's CDI spec into the CDI directory and records
the answer in the checkpoint before answering; a claim in the checkpoint is answered from it
without the API, so the kubelet may ask again at any time (after its own restart, or ours).
A device whose mounts and device nodes discovery has not reported yet (just after an agent
restart) is waited for, briefly, then refused: no container starts without them.
Unprepare deletes the spec file and the record; an unknown claim is already unprepared.
Failures are per claim, in the answer's `error`, as the API asks: one bad claim does not fail
the others of the call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.agent.changes import Changes
from akri.agent.devices import DeviceStore, NotDiscovered
from akri.agent.dra import cdi, checkpoint
from akri.agent.dra.claims import (
    ClaimError,
    DeviceKey,
    KnownDevice,
    Request,
    allocated_requests,
    device_index,
)
from akri.agent.extras import Extras
from akri.agent.instances import InstanceCache
from akri.agent.plugins.desired import ConfigurationLookup
from akri.agent.plugins.response import allocate_response
from akri.api import Instance
from akri.dra.devices import allocation_results
from akri.kube.calls import call, error_message
from akri.logs import OnceLog
from akri.proto.deviceplugin.v1beta1.api_pb2 import ContainerAllocateResponse
from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.dra.v1.api_pb2_grpc import DRAPluginServicer
from akri.proto.drahealth.v1alpha1 import api_pb2 as health
from akri.proto.drahealth.v1alpha1.api_pb2_grpc import DRAResourceHealthServicer

log = logging.getLogger(__name__)

JSON = dict[str, Any]
Context = grpc.aio.ServicerContext[Any, Any]
GROUP, VERSION = "resource.k8s.io", "v1"


@dataclass(frozen=True)
class PluginEnv:
    """What the DRA plugin works from."""

    api_client: client.ApiClient
    cache: InstanceCache
    configurations: ConfigurationLookup
    devices: DeviceStore
    rediscovery_wait: float
    """Seconds a prepare waits for discovery to report a device it does not know yet."""
    node: str
    state_dir: Path
    """Where the checkpoint lives (`<kubelet plugins dir>/akri.sh`)."""
    cdi_dir: Path


class DraPlugin(DRAPluginServicer, DRAResourceHealthServicer):
    def __init__(self, env: PluginEnv) -> None:
        self.env = env
        self._checkpoint = env.state_dir / checkpoint.FILE_NAME
        self._prepared = checkpoint.load(self._checkpoint)
        self._lock = asyncio.Lock()
        self._warn_once = OnceLog(log)
        self.prepared_changes = Changes()
        """Told when a claim is prepared or unprepared (this node's pools offer according to
        what its claims hold, `allocated`)."""

    @property
    def prepared(self) -> Mapping[str, JSON]:
        """Prepared claims by uid, as checkpointed."""
        return self._prepared

    def allocated(self, pool: str) -> set[str]:
        """The devices of `pool` that claims prepared on this node hold: for a pool of this
        node's local devices, what its claims hold once their pods are admitted."""
        return {
            str(device["device_name"])
            for record in tuple(self._prepared.values())  # a thread may be writing it
            for device in record["devices"]
            if device["pool_name"] == pool
        }

    def index(self, allocated: Collection[str] = ()) -> dict[DeviceKey, KnownDevice]:
        env = self.env
        return device_index(env.cache.all(), env.configurations, env.node, allocated)

    async def NodePrepareResources(
        self, request: dra.NodePrepareResourcesRequest, context: Context
    ) -> dra.NodePrepareResourcesResponse:
        answers = await asyncio.gather(*(self._prepare(claim) for claim in request.claims))
        return dra.NodePrepareResourcesResponse(
            claims={
                claim.uid: answer for claim, answer in zip(request.claims, answers, strict=True)
            }
        )

    async def NodeUnprepareResources(
        self, request: dra.NodeUnprepareResourcesRequest, context: Context
    ) -> dra.NodeUnprepareResourcesResponse:
        answers = {claim.uid: await self._unprepare(claim) for claim in request.claims}
        return dra.NodeUnprepareResourcesResponse(claims=answers)

    async def _prepare(self, claim: dra.Claim) -> dra.NodePrepareResourceResponse:
        name = f"{claim.namespace}/{claim.name}"
        try:
            record = self._prepared.get(claim.uid)
            if record is None:
                stored = await call(
                    client.CustomObjectsApi(self.env.api_client).get_namespaced_custom_object,
                    GROUP,
                    VERSION,
                    claim.namespace,
                    "resourceclaims",
                    claim.name,
                )
                held = {str(result["device"]) for result in allocation_results(stored)}
                index = self.index(held)
                requests = allocated_requests(stored, claim.uid, index)
                extras = await self.env.devices.wait(
                    {i.metadata.name or "" for r in requests.values() for i in r.instances},
                    self.env.rediscovery_wait,
                )
                record = self._record(claim, requests, extras)
            async with self._lock:
                record = self._prepared.get(claim.uid, record)
                await asyncio.to_thread(self._write, claim.uid, record)
            self.prepared_changes.changed()
        except (ClaimError, NotDiscovered) as error:
            return self._failed(name, str(error))
        except ApiException as error:
            return self._failed(name, f"reading the claim failed: {error_message(error)}")
        except OSError as error:
            return self._failed(name, f"writing its CDI spec failed: {error}")
        except Exception as error:  # a bug must fail one claim, not the agent
            log.exception("preparing ResourceClaim %s failed unexpectedly", name)
            return self._failed(name, f"internal error: {error!r}")
        return dra.NodePrepareResourceResponse(devices=[_device(d) for d in record["devices"]])

    def _failed(self, claim: str, message: str) -> dra.NodePrepareResourceResponse:
        log.warning("ResourceClaim %s not prepared: %s", claim, message)
        return dra.NodePrepareResourceResponse(error=message)

    def _record(
        self, claim: dra.Claim, requests: Mapping[str, Request], extras: Mapping[str, Extras]
    ) -> JSON:
        """The answer and the CDI spec for a claim's requests."""
        answers = {}
        devices: list[JSON] = []
        for request_name, request in requests.items():
            answers[request_name] = self._container_answer(request.instances, extras)
            for position, result in enumerate(request.results):
                device: JSON = {
                    "request_names": [request_name],
                    "pool_name": result["pool"],
                    "device_name": result["device"],
                    # every container of the request gets all its devices: one id suffices
                    "cdi_device_ids": [cdi.device_id(claim.uid, request_name)]
                    if position == 0
                    else [],
                }
                if result.get("shareID"):
                    device["share_id"] = result["shareID"]
                devices.append(device)
        return {
            "namespace": claim.namespace,
            "name": claim.name,
            "devices": devices,
            "spec": cdi.claim_spec(claim.uid, answers),
        }

    def _container_answer(
        self, instances: list[Instance], extras: Mapping[str, Extras]
    ) -> ContainerAllocateResponse:
        """What Allocate would give one container granted `instances`."""
        configuration_properties: dict[str, str] = {}
        for instance in instances:
            found = self.env.configurations(
                instance.metadata.namespace or "default", instance.spec.configuration_name
            )
            if found is not None:
                configuration_properties.update(found.spec.broker_properties)
        response, dropped = allocate_response(
            [[instance.metadata.name or "" for instance in instances]],
            {i.metadata.name or "": i.spec.broker_properties for i in instances},
            configuration_properties,
            extras,
        )
        for problem in sorted(dropped, key=str):
            self._warn_once(str(problem))
        return response.container_responses[0]

    def _write(self, uid: str, record: JSON) -> None:
        """The CDI spec first, then the checkpoint: a crash in between leaves a spec that a
        later unprepare (by uid) still removes."""
        spec = self.env.cdi_dir / cdi.spec_file_name(uid)
        if self._prepared.get(uid) == record and spec.exists():
            return
        checkpoint.write_atomically(spec, json.dumps(record["spec"], indent=1))
        self._prepared[uid] = record
        checkpoint.save(self._checkpoint, self._prepared)

    async def _unprepare(self, claim: dra.Claim) -> dra.NodeUnprepareResourceResponse:
        try:
            async with self._lock:
                await asyncio.to_thread(self._remove, claim.uid)
            self.prepared_changes.changed()
        except OSError as error:
            message = f"removing its CDI spec failed: {error}"
            log.warning(
                "ResourceClaim %s/%s not unprepared: %s", claim.namespace, claim.name, message
            )
            return dra.NodeUnprepareResourceResponse(error=message)
        return dra.NodeUnprepareResourceResponse()

    def _remove(self, uid: str) -> None:
        (self.env.cdi_dir / cdi.spec_file_name(uid)).unlink(missing_ok=True)
        if self._prepared.pop(uid, None) is not None:
            checkpoint.save(self._checkpoint, self._prepared)

    async def NodeWatchResources(
        self, request: health.NodeWatchResourcesRequest, context: Context
    ) -> AsyncIterator[health.NodeWatchResourcesResponse]:
        """The health of every device this node sees, then each change; a device that is gone
        from the node stays reported as unhealthy."""
        sent: dict[DeviceKey, str] | None = None
        with self.env.cache.subscribe() as changes:
            while True:
                now = {
                    k: HEALTHY if known.healthy else TAINTED for k, known in self.index().items()
                }
                current = {**dict.fromkeys(sent or {}, GONE), **now}
                if current != sent:
                    sent = current
                    yield health.NodeWatchResourcesResponse(
                        devices=[_health(key, state) for key, state in sorted(current.items())]
                    )
                await changes.next()


HEALTHY, TAINTED, GONE = "healthy", "tainted", "gone"
_HEALTH = {
    HEALTHY: (health.HEALTHY, ""),
    TAINTED: (health.UNHEALTHY, "the device's Instance is being deleted"),
    GONE: (health.UNHEALTHY, "the device is no longer seen on this node"),
}
"""What the health stream says of a device this node sees, one going away, one gone."""


def _device(record: JSON) -> dra.Device:
    return dra.Device(**record)


def _health(key: DeviceKey, state: str) -> health.DeviceHealth:
    status, message = _HEALTH[state]
    return health.DeviceHealth(
        device=health.DeviceIdentifier(pool_name=key[0], device_name=key[1]),
        health=status,
        last_updated_time=int(time.time()),
        message=message,
    )
