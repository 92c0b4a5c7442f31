"""The kubelet emulator's calls on a DRA plugin, cut while in flight.

A call cut because its channel closes (the plugin's socket went with its agent, or the kubelet
stops) fails as a call: grpc.aio reports it as a CancelledError, which must not reach the
caller as its own cancellation. Soak seed 2027666735 (DRA mode): an agent was killed while its
node's bridge waited in NodePrepareResources, and the bridge task ended by a CancelledError.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc
import pytest

from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.dra.v1.api_pb2_grpc import DRAPluginServicer, add_DRAPluginServicer_to_server
from akri.proto.dra.v1.constants import DRA_PLUGIN_SERVICE
from akri.sim.kubelet.dra import ClaimInfo, DraManager, PrepareError
from tests.support import eventually

DRIVER = "akri.sh"
POD: dict[str, Any] = {"metadata": {"uid": "pod-uid", "name": "p", "namespace": "default"}}
CLAIM: dict[str, Any] = {
    "metadata": {"namespace": "default", "name": "c", "uid": "claim-uid"},
    "status": {
        "reservedFor": [{"uid": "pod-uid"}],
        "allocation": {"devices": {"results": [{"driver": DRIVER, "device": "d"}]}},
    },
}


class Stalling(DRAPluginServicer):
    """Takes every call and never answers: a call is in flight for as long as the test likes."""

    def __init__(self) -> None:
        self.calls = 0

    async def _stall(self) -> None:
        self.calls += 1
        await asyncio.Event().wait()

    async def NodePrepareResources(
        self, request: dra.NodePrepareResourcesRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> dra.NodePrepareResourcesResponse:
        await self._stall()
        return dra.NodePrepareResourcesResponse()

    async def NodeUnprepareResources(
        self,
        request: dra.NodeUnprepareResourcesRequest,
        context: grpc.aio.ServicerContext[Any, Any],
    ) -> dra.NodeUnprepareResourcesResponse:
        await self._stall()
        return dra.NodeUnprepareResourcesResponse()


@pytest.fixture
async def plugin(socket_dir: Path) -> AsyncIterator[tuple[Stalling, str]]:
    servicer = Stalling()
    server = grpc.aio.server()
    add_DRAPluginServicer_to_server(servicer, server)
    endpoint = str(socket_dir / "dra.sock")
    server.add_insecure_port(f"unix://{endpoint}")
    await server.start()
    yield servicer, endpoint
    await server.stop(grace=None)


@pytest.fixture
async def manager() -> AsyncIterator[DraManager]:
    running = DraManager()
    yield running
    await running.shutdown()


KEY = ("default", "c")
Work = Callable[[DraManager], Coroutine[Any, Any, None]]


def prepare(manager: DraManager) -> Coroutine[Any, Any, None]:
    return manager.prepare(POD, [CLAIM])


def unprepare(manager: DraManager) -> Coroutine[Any, Any, None]:
    """The claim was prepared and no pod uses it any more."""
    manager.claims[KEY] = ClaimInfo(*KEY, "claim-uid", frozenset({DRIVER}), prepared=True)
    return manager.reconcile(active=set())


async def in_flight(
    manager: DraManager, plugin: tuple[Stalling, str], work: Work
) -> asyncio.Task[None]:
    """`work` as a task, once its call has reached the plugin."""
    fake, endpoint = plugin
    await manager.register(DRIVER, endpoint, [DRA_PLUGIN_SERVICE])
    task = asyncio.create_task(work(manager))
    await eventually(lambda: fake.calls, "the call to reach the plugin")
    return task


async def cut(manager: DraManager, plugin: tuple[Stalling, str], how: str) -> None:
    if how == "plugin leaves":
        await manager.deregister(DRIVER, plugin[1])
    else:
        await manager.shutdown()


HOW = ["plugin leaves", "kubelet stops"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize(
    ("work", "failure", "prepared"),
    [(prepare, PrepareError, False), (unprepare, type(None), True)],
)
async def test_a_call_cut_in_flight_fails_as_a_call_and_is_tried_again(
    plugin: tuple[Stalling, str],
    manager: DraManager,
    how: str,
    work: Work,
    failure: type[object],
    prepared: bool,
) -> None:
    """A prepare raises PrepareError (the bridge tries the pod again later); a reconcile
    logs the failure and keeps the claim for its next pass."""
    task = await in_flight(manager, plugin, work)

    await cut(manager, plugin, how)

    [outcome] = await asyncio.gather(task, return_exceptions=True)
    assert isinstance(outcome, failure), repr(outcome)
    assert manager.claims[KEY].prepared is prepared


@pytest.mark.parametrize("work", [prepare, unprepare])
async def test_the_callers_own_cancellation_still_cancels_it(
    plugin: tuple[Stalling, str], manager: DraManager, work: Work
) -> None:
    task = await in_flight(manager, plugin, work)

    task.cancel()

    [outcome] = await asyncio.gather(task, return_exceptions=True)
    assert isinstance(outcome, asyncio.CancelledError)
