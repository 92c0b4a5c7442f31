"""What the instance- and configuration-level plugins share: ListAndWatch driven by the
Instance cache, and an Allocate that is bounded in time and never lets an error escape.

ListAndWatch sends the full list at once and then only when it changed, woken by the cache
for changes of its own Instances instead of polling. A plugin whose list follows many Instances
(the configuration level) sends a list that only grows (a thousand devices found at start-up)
at most every `send_interval`, so neither this agent nor the kubelet handles a thousand ever
longer lists. A list that has lost a healthy device when the plugin wakes goes out at once: a
slot taken elsewhere must reach the kubelet before it admits a pod onto that slot
(docs/design.md §5.3).

Allocate runs under a deadline because the kubelet sets none and a hung Allocate blocks every
pod admission on the node; every failure becomes a gRPC error whose message says what went
wrong, which the kubelet puts into the pod's status. A device whose mounts and device nodes
discovery has not reported yet (just after an agent restart) is waited for, briefly, then
refused (`DeviceStore`): a container never starts without them.
"""

from __future__ import annotations

import abc
import asyncio
import functools
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from kubernetes_asyncio.client.exceptions import ApiException

from akri.agent.devices import DeviceStore, NotDiscovered
from akri.agent.extras import Extras
from akri.agent.instances import InstanceCache, Topic
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins.desired import ConfigurationLookup, PluginSpec
from akri.agent.plugins.group_commit import GroupCommit
from akri.agent.plugins.response import allocate_response
from akri.agent.plugins.server import OPTIONS
from akri.api import Instance
from akri.kube.guarded import UpdateConflict
from akri.kube.reflector import Key
from akri.logs import OnceLog
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateRequest,
    AllocateResponse,
    Device,
    DevicePluginOptions,
    Empty,
    ListAndWatchResponse,
    PreferredAllocationRequest,
    PreferredAllocationResponse,
    PreStartContainerRequest,
    PreStartContainerResponse,
)
from akri.proto.deviceplugin.v1beta1.api_pb2_grpc import DevicePluginServicer
from akri.proto.deviceplugin.v1beta1.constants import HEALTHY, UNHEALTHY
from akri.slots import AllocationError

log = logging.getLogger(__name__)

Context = grpc.aio.ServicerContext[Any, Any]
StreamListener = Callable[[], Callable[[], None]]
"""Called when ListAndWatch opens; the function it returns is called when that stream ends."""


@dataclass(frozen=True)
class PluginEnv:
    """What every plugin on the node shares."""

    cache: InstanceCache
    configurations: ConfigurationLookup
    node: str
    commits: GroupCommit
    allocate_timeout: float
    devices: DeviceStore
    rediscovery_wait: float
    """Seconds an Allocate waits for discovery to report a device it does not know yet."""
    warn_once: OnceLog
    metrics: AgentMetrics


@functools.lru_cache(maxsize=4096)
def _encoded(device: str, healthy: bool) -> bytes:
    """One device as a list of one device, serialized."""
    listed = Device(ID=device, health=HEALTHY if healthy else UNHEALTHY)
    return ListAndWatchResponse(devices=[listed]).SerializeToString()


def list_response(devices: Mapping[str, bool]) -> ListAndWatchResponse:
    """The list `devices` as one response, in their order.

    Every change of an Instance sends its plugins' lists again, on every node that sees it: a
    configuration-level list has a device per free slot of all its Instances. A serialized
    repeated field is the concatenation of its elements, so the list is joined from each
    device's serialization (made once) and parsed in C: a tenth of the CPU of building the
    messages field by field.
    """
    return ListAndWatchResponse.FromString(
        b"".join([_encoded(device, healthy) for device, healthy in devices.items()])
    )


def _only_grows(before: Mapping[str, bool], after: Mapping[str, bool]) -> bool:
    """Every device healthy `before` is still healthy `after`: holding it back offers nothing
    that is gone."""
    return all(after.get(device, False) for device, healthy in before.items() if healthy)


class PluginServicer(DevicePluginServicer, abc.ABC):
    options = OPTIONS
    """What it tells the kubelet it offers, at registration and when asked."""
    send_interval = 0.0
    """Seconds between two sends of a list that only grows; 0 sends every change at once."""

    def __init__(self, spec: PluginSpec, env: PluginEnv, stream_listener: StreamListener) -> None:
        self.spec = spec
        self.env = env
        self._stream_listener = stream_listener

    @abc.abstractmethod
    def topic(self) -> Topic:
        """The cache changes the device list depends on."""

    @abc.abstractmethod
    def devices(self) -> dict[str, bool]:
        """The device list now: id -> healthy."""

    def wakes(self) -> Callable[[Key], bool]:
        """Which changes of `topic` may change `devices` (a `relevant` for the cache's
        `subscribe`, made as a stream opens): every one unless a plugin knows better."""
        return lambda _: True

    @abc.abstractmethod
    async def allocate(self, containers: Sequence[Sequence[str]]) -> AllocateResponse:
        """Grant each container its device ids; raises AllocationError when that cannot be."""

    async def GetDevicePluginOptions(self, request: Empty, context: Context) -> DevicePluginOptions:
        return self.options

    async def ListAndWatch(
        self, request: Empty, context: Context
    ) -> AsyncIterator[ListAndWatchResponse]:
        ended = self._stream_listener()
        loop = asyncio.get_running_loop()
        sent: dict[str, bool] | None = None
        sent_at = -math.inf
        try:
            with self.env.cache.subscribe(self.topic(), self.wakes()) as changes:
                devices = self.devices()
                while True:
                    if devices != sent:
                        self.env.metrics.list_and_watch_sends.labels(self.spec.level).inc()
                        sent, sent_at = devices, loop.time()
                        yield list_response(devices)
                    await changes.next()
                    devices = self.devices()
                    wait = sent_at + self.send_interval - loop.time()
                    if self.send_interval and wait > 0 and _only_grows(sent, devices):
                        await asyncio.sleep(wait)
                        devices = self.devices()
        finally:
            ended()

    async def Allocate(self, request: AllocateRequest, context: Context) -> AllocateResponse:
        started = time.perf_counter()
        containers = [list(c.devices_ids) for c in request.container_requests]
        code, message, result = grpc.StatusCode.OK, "", "granted"
        try:
            async with asyncio.timeout(self.env.allocate_timeout):
                response = await self.allocate(containers)
        except AllocationError as error:
            code, message, result = grpc.StatusCode.FAILED_PRECONDITION, str(error), "refused"
        except NotDiscovered as error:
            code, message, result = grpc.StatusCode.UNAVAILABLE, str(error), "refused"
        except TimeoutError:
            code, result = grpc.StatusCode.DEADLINE_EXCEEDED, "timeout"
            message = (
                f"not decided within {self.env.allocate_timeout:g}s: the Kubernetes API is "
                "slow or unreachable; the pod can be retried"
            )
        except UpdateConflict as error:
            code, message, result = grpc.StatusCode.ABORTED, str(error), "error"
        except ApiException as error:
            code, result = grpc.StatusCode.UNAVAILABLE, "error"
            message = f"Kubernetes API error {error.status} {error.reason}"
        except Exception as error:  # a bug must fail one pod, not the agent
            log.exception("Allocate of %s failed unexpectedly", self.spec.resource)
            code, message, result = grpc.StatusCode.INTERNAL, f"internal error: {error!r}", "error"
        finally:
            self.env.metrics.allocation_latency.labels(self.spec.level).observe(
                time.perf_counter() - started
            )
        self.env.metrics.allocations.labels(self.spec.level, result).inc()
        if code != grpc.StatusCode.OK:
            message = f"{self.spec.resource}: cannot allocate {containers}: {message}"
            log.warning("%s", message)
            await context.abort(code, message)
        return response

    async def extras(self, instances: Collection[str]) -> dict[str, Extras]:
        """The mounts and device nodes of `instances`; raises NotDiscovered when discovery does
        not report one of them in time."""
        return await self.env.devices.wait(instances, self.env.rediscovery_wait)

    def respond(
        self,
        containers: Sequence[Sequence[str]],
        instances: Mapping[str, Instance],
        configuration: str,
        extras: Mapping[str, Extras],
    ) -> AllocateResponse:
        """The response for containers granted slots of the named `instances`."""
        found = self.env.configurations(self.spec.namespace, configuration)
        response, dropped = allocate_response(
            containers,
            {name: instance.spec.broker_properties for name, instance in instances.items()},
            found.spec.broker_properties if found is not None else {},
            extras,
        )
        for problem in sorted(dropped, key=str):
            self.env.warn_once(str(problem))
        return response

    async def GetPreferredAllocation(
        self, request: PreferredAllocationRequest, context: Context
    ) -> PreferredAllocationResponse:
        await context.abort(grpc.StatusCode.UNIMPLEMENTED, "no preferred allocation is offered")

    async def PreStartContainer(
        self, request: PreStartContainerRequest, context: Context
    ) -> PreStartContainerResponse:
        return PreStartContainerResponse()
