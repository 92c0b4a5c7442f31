"""Instance creation throughput: N new devices on one node -> N Instances in the API.

The real `akri-agent` program in its own process, the API emulator and a kubelet emulator in
this one. One debugEcho Configuration discovers N devices at once; the emulator answers every
request after an added latency (0: loopback; 0.2 s: about what a cluster's API server took
per create in the measurement that opened issue 15). Measured at the emulator, sampled every
10 ms: from the first create arriving until all N are stored, and the most creates in flight
at once (arrived, not yet answered), which the agent's adaptive window bounds (at most 64).
A fixed window of 8, as before, needs at least N / 8 x latency.

Run: `python bench/bench_instance_creates.py [--instances N] [--latency S ...]`.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
import time
from pathlib import Path

from _common import (
    OPEN_FILES,
    AgentProcess,
    Section,
    api_server,
    counting,
    create_configuration,
    finish,
    follow_creates,
    kubelet_for,
    quiet_grpc,
    quiet_logs,
    raise_open_files,
    verdict,
)
from bench_agent_scale import CONFIGURATION, NODE, distinct_devices

from akri.sim.apiserver.faults import FaultRule
from akri.sim.cluster import load_client

TARGET_S = 5.0
WINDOW_MAX = 64
Rows = list[tuple[str, str]]


async def run_once(instances: int, latency: float) -> Rows:
    descriptions, _ = distinct_devices(instances)
    with tempfile.TemporaryDirectory(prefix="akri-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with api_server(root) as (server, kubeconfig):
            async with await load_client(kubeconfig) as api:
                await create_configuration(api, CONFIGURATION, descriptions, 1)
            if latency:
                server.faults.add(FaultRule(delay=latency))
            async with kubelet_for(root, NODE) as _:
                with counting(server, ("create",), "instances") as requests:
                    agent = await AgentProcess.spawn(root, kubeconfig, NODE)
                    try:
                        first, done, peak = await follow_creates(
                            server, requests["create"], instances
                        )
                    finally:
                        await agent.stop()
    took = done - first
    rate = instances / took if took else math.inf
    label = f"{latency * 1e3:.0f} ms added API latency" if latency else "loopback"
    rows: Rows = [
        (f"first create -> all Instances stored, {label}", f"{took:.2f} s ({rate:.0f} per second)"),
        (f"  target <= {TARGET_S:.0f} s", verdict(took <= TARGET_S)),
        (
            "  most creates in flight at once",
            f"{peak} (window maximum {WINDOW_MAX})"
            if peak
            else "none seen (answered within 10 ms)",
        ),
        ("  creates sent (one per Instance, 0 refused)", f"{requests['create'].hits}"),
    ]
    if latency:
        rows.append(
            ("  a fixed window of 8 would need at least", f"{instances / 8 * latency:.1f} s")
        )
    return rows


def main() -> int:
    quiet_grpc()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--latency", type=float, nargs="*", default=[0.0, 0.2])
    args = parser.parse_args()
    quiet_logs()
    raise_open_files(OPEN_FILES)
    began, load = time.monotonic(), os.getloadavg()[0]
    tables = [asyncio.run(run_once(args.instances, latency)) for latency in args.latency]
    finish(
        [Section(f"{args.instances} new Instances", [row for rows in tables for row in rows])],
        began,
        load,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
