"""ONVIF client cost: the hand-written SOAP client it replaced vs onvif-zeep-async, one run.

The old client is not kept in the tree (no dead code): this script takes it from the commit
before the one that removed it (`git archive` into a temporary folder, put first on
PYTHONPATH), so both are measured by the same script, on the same machine, in the same run.
Each client runs in a fresh interpreter that measures importing the handler's device module
(time, and the process's resident memory after it), then inspects one fake camera with
credentials (5 SOAP calls: clock, network interfaces, media service, profiles, stream URI;
the library's client also asks GetDeviceInformation, a sixth, which the old one never did, so
compare per call) `--rounds` times; the library's first inspection also parses the WSDLs,
shown apart.
The rows also go to `make report` (docs/performance.md), prefixed by the client's name.

    .venv/bin/python bench/bench_onvif_client.py [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REMOVED = "discovery-handlers/akri/discovery_handlers/onvif/soap.py"
SOURCE_ROOTS = ("core", "agent", "discovery-handlers")
DEVICE = "akri.discovery_handlers.onvif.device"


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def _inspect_rounds(client: str, device: Any, rounds: int) -> dict[str, Any]:
    import aiohttp

    from akri.discovery_handlers.onvif.credentials import Credentials
    from tests.handlers.fake_onvif import FakeCamera, free_udp_port

    credentials = Credentials("admin", "secret")
    async with (
        FakeCamera(port=free_udp_port(), uuid="bench") as camera,
        aiohttp.ClientSession() as session,
    ):
        if client == "old":

            async def inspect() -> Any:
                return await device.inspect(session, camera.xaddr, "bench", credentials, 5.0)
        else:
            services = importlib.import_module("akri.discovery_handlers.onvif.services")
            transport = services.Transport(session, 5.0)

            async def inspect() -> Any:
                documents = await services.documents()
                return await device.inspect(
                    transport, documents, camera.xaddr, "bench", credentials
                )

        started = time.perf_counter()
        first = await inspect()
        first_s = time.perf_counter() - started
        if first is None or not first.stream_uris:
            raise SystemExit(f"{client}: the fake camera gave no stream URI")
        samples = []
        for _ in range(rounds):
            started = time.perf_counter()
            await inspect()
            samples.append(time.perf_counter() - started)
        calls = len(camera.operations) // (rounds + 1)
    return {"first_s": first_s, "samples": samples, "calls": calls, "rss_after_mb": _rss_mb()}


def worker(client: str, rounds: int) -> None:
    """In a fresh interpreter: import cost, then inspection latency; JSON on stdout."""
    rss_before = _rss_mb()
    started = time.perf_counter()
    device = importlib.import_module(DEVICE)
    import_s = time.perf_counter() - started
    rss_import = _rss_mb()
    result = asyncio.run(_inspect_rounds(client, device, rounds))
    result.update(import_s=import_s, rss_before_mb=rss_before, rss_import_mb=rss_import)
    print(json.dumps(result))


def _old_sources(into: Path) -> str:
    """Extract the source roots of the commit before the old client was removed; its id."""
    removal = subprocess.run(
        ["git", "rev-list", "-1", "HEAD", "--", REMOVED],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    archive = subprocess.run(
        ["git", "archive", f"{removal}^", *SOURCE_ROOTS], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return subprocess.run(
        ["git", "rev-parse", "--short", f"{removal}^"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _run(client: str, rounds: int, pythonpath: list[str]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*pythonpath, str(ROOT)]))
    out = subprocess.run(
        [sys.executable, __file__, "--worker", client, "--rounds", str(rounds)],
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        sys.exit(f"{client} client run failed:\n{out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--worker", choices=["old", "library"])
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.rounds)
        return
    # Only here: the workers must not import the harness (the API emulator...) before measuring.
    from _common import Section, finish, latencies_ms, percentile

    began, load_before = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        old_commit = _old_sources(Path(folder))
        runs = {
            ("old client", old_commit): _run(
                "old", args.rounds, [str(Path(folder, r)) for r in SOURCE_ROOTS]
            ),
            ("onvif-zeep-async", ""): _run("library", args.rounds, []),
        }
    sections = []
    for (name, commit), run in runs.items():
        samples = run["samples"]
        rows = [
            ("import of the device module", f"{run['import_s'] * 1000:.0f} ms"),
            (
                "RSS after import (before)",
                f"{run['rss_import_mb']:.1f} MB ({run['rss_before_mb']:.1f} MB)",
            ),
            ("RSS after the inspections", f"{run['rss_after_mb']:.1f} MB"),
            ("first inspection", f"{run['first_s'] * 1000:.1f} ms"),
            (f"inspection ({run['calls']} calls) p50/p99/max", latencies_ms(samples)),
            ("per call p50", f"{percentile(samples, 50) / run['calls'] * 1000:.2f} ms"),
        ]
        title = f"{name}{f' ({commit})' if commit else ''}, {len(samples)} inspections"
        sections.append(Section(f"{title} of one fake camera", rows, f"{name}: "))
    finish(sections, began, load_before)


if __name__ == "__main__":
    main()
