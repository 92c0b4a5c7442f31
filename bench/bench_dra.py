"""DRA mode benchmark on the API emulator: how fast a node's ResourceSlices follow its devices,
and what publishing 1000 devices in one pool costs.

- slice update: a node's pool of 20 devices gains or loses one device; the time from the change
  to the slices written (list, plan, write; one slice updated in place) over 200 changes;
- a sync when nothing changed (one list, no write);
- 1000 devices of one Configuration in one pool: time to publish from nothing, how many slices
  (at most 64 devices each) and writes; then one device changed in the middle of that pool.
Run: `python bench/bench_dra.py`.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path

from _common import Section, finish, latencies_ms, quiet_logs

from akri.api import Instance
from akri.dra.devices import instance_devices
from akri.dra.slices import MAX_DEVICES_PER_SLICE, Pool, local_pool_name
from akri.dra.writer import SliceWriter
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client

NODE = "node-0"
CHANGES = 200


def devices(count: int, start: int = 0) -> list[dict[str, object]]:
    result: list[dict[str, object]] = []
    for i in range(start, start + count):
        instance = Instance.from_wire(
            {
                "apiVersion": "akri.sh/v0",
                "kind": "Instance",
                "metadata": {"name": f"cam-{i:06x}", "namespace": "default"},
                "spec": {
                    "configurationName": "cam",
                    "capacity": 2,
                    "nodes": [NODE],
                    "brokerProperties": {"ONVIF_DEVICE_IP_ADDRESS": f"10.0.{i // 256}.{i % 256}"},
                },
            }
        )
        mapped = instance_devices(instance, handler="onvif", unique=True, per_device_nodes=False)
        result.extend(mapped.devices)
    return result


def pool(found: list[dict[str, object]]) -> Pool:
    return Pool(local_pool_name("cam", NODE), NODE, found)


async def main() -> None:
    quiet_logs()
    began, load_before = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="akri-bench-") as workdir:
        async with ApiServer() as server:
            api = await load_client(server.write_kubeconfig(Path(workdir) / "kubeconfig"))
            async with api:
                writer = SliceWriter(api, NODE)
                small = devices(20)
                await writer.sync([pool(small)])
                updates = []
                for i in range(CHANGES):
                    current = small + devices(1, 1000) if i % 2 == 0 else small
                    started = time.perf_counter()
                    await writer.sync([pool(current)])
                    updates.append(time.perf_counter() - started)
                idle = []
                for _ in range(50):
                    started = time.perf_counter()
                    wrote = await writer.sync([pool(small)])
                    idle.append(time.perf_counter() - started)
                    assert not wrote
                await writer.sync([])
                large = devices(1000, 2000)
                big = SliceWriter(api, NODE)
                started = time.perf_counter()
                await big.sync([pool(large)])
                publish_s = time.perf_counter() - started
                slices = (await big.stored())[local_pool_name("cam", NODE)]
                sizes = [len(s["spec"]["devices"]) for s in slices]
                changed = list(large)
                changed[500] = {**changed[500], "attributes": {"x": {"string": "changed"}}}
                writes_before = big.writes
                started = time.perf_counter()
                await big.sync([pool(changed)])
                one_change_s = time.perf_counter() - started
                one_change_writes = big.writes - writes_before
    finish(
        [
            Section(
                "ResourceSlices of one node (API emulator)",
                [
                    (
                        "slice update after a device appears or goes (20-device pool)",
                        latencies_ms(updates),
                    ),
                    ("sync with nothing changed (no write)", latencies_ms(idle)),
                    ("1000 devices published in one pool", f"{publish_s:.2f} s"),
                    (
                        "  slices",
                        f"{len(slices)} (largest {max(sizes)}, limit {MAX_DEVICES_PER_SLICE})",
                    ),
                    ("  writes", f"{big.writes - one_change_writes}"),
                    (
                        "one device changed in the 1000-device pool",
                        f"{one_change_s * 1e3:.1f} ms, {one_change_writes} write(s)",
                    ),
                ],
                "dra: ",
            )
        ],
        began,
        load_before,
    )


if __name__ == "__main__":
    asyncio.run(main())
