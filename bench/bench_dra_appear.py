"""DRA mode end to end: a device appears on a node, how long until the scheduler can see it.

A local cluster (API emulator, one node with its kubelet emulator and a real agent, the real
controller, all in this process) in DRA mode. A shared debugEcho device is taken offline
(offline grace 0, so its Instance goes and its device leaves the slices) and brought back with
`set_offline`; measured from that call until a watch on ResourceSlices shows the device again
(discovery, the agent's Instance create, the controller's watch and its slice write), and the
same for the way back (until the device has left the slices). A second Configuration with 100
steady devices has a pool of its own in the same cluster.

Run: `python bench/bench_dra_appear.py [--quick]`. Prints numbers; never fails on them.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _common import Section, create_configuration, finish, latencies_ms, quiet_logs
from kubernetes_asyncio import client

from akri import naming
from akri.controller.context import Tuning
from akri.dra.mode import Mode
from akri.kube.reflector import Object, Reflector
from akri.sim.cluster import Cluster

NODE = "node-0"
PROBE = naming.instance_name("appear", "probe")
WAIT_S = 10.0
"""Longest wait for one step before the run is reported as stuck (not a timing verdict)."""


class SliceWatch:
    """Follows every ResourceSlice; `until` waits for a condition on the devices' names."""

    def __init__(self, api: client.ApiClient) -> None:
        lister = functools.partial(
            client.CustomObjectsApi(api).list_cluster_custom_object,
            "resource.k8s.io",
            "v1",
            "resourceslices",
        )
        self.reflector = Reflector(lister, self._changed)
        self._changes = asyncio.Condition()

    async def _changed(self, _kind: str, _obj: Object) -> None:
        async with self._changes:
            self._changes.notify_all()

    def names(self) -> set[str]:
        return {
            str(d["name"])
            for s in self.reflector.objects.values()
            for d in s["spec"].get("devices") or []
        }

    async def until(self, condition: Callable[[set[str]], bool], what: str) -> None:
        try:
            async with asyncio.timeout(WAIT_S), self._changes:
                await self._changes.wait_for(lambda: condition(self.names()))
        except TimeoutError:
            raise RuntimeError(f"timed out after {WAIT_S:g} s waiting for {what}") from None


async def main(appearances: int) -> None:
    quiet_logs()
    began, load_before = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="akri-bench-") as workdir:
        async with Cluster(
            [NODE],
            workdir=Path(workdir),
            agents=True,
            agent_options={"offline_grace": 0},
            controller=Tuning(),
            mode=Mode.DRA,
        ) as cluster:
            api = cluster.api_client()
            watch = SliceWatch(api)
            follow = asyncio.create_task(watch.reflector.run())
            try:
                await create_configuration(api, "steady", [f"d{i}" for i in range(100)], 2)
                await create_configuration(api, "appear", ["probe"], 2)
                await watch.until(lambda names: PROBE in names, "the first appearance")
                echo = cluster.nodes[NODE].debug_echo
                appear, leave = [], []
                for _ in range(appearances):
                    started = time.perf_counter()
                    echo.set_offline(["probe"])
                    await watch.until(lambda names: PROBE not in names, "the device to leave")
                    leave.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    echo.set_offline()
                    await watch.until(lambda names: PROBE in names, "the device to appear")
                    appear.append(time.perf_counter() - started)
            finally:
                follow.cancel()
    finish(
        [
            Section(
                "DRA: device change to ResourceSlice, whole local cluster (1 node)",
                [
                    ("device appears -> in the shared slice", latencies_ms(appear)),
                    ("device gone (grace 0) -> out of the slice", latencies_ms(leave)),
                    ("  appearances measured", str(appearances)),
                ],
                "dra e2e: ",
            )
        ],
        began,
        load_before,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 appearances instead of 200")
    asyncio.run(main(20 if parser.parse_args().quick else 200))
