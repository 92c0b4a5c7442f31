"""The chaos soak, `make soak` (SOAK_SECONDS, SOAK_SEED, SOAK_MODE=dra; see --help).

Exit 0 when the run found no violation, 1 otherwise; the seed is printed first, so any run
can be replayed exactly with SOAK_SEED=<seed>.
"""

from __future__ import annotations

import os

# gRPC reads its log level when first imported: every plugin stream cut in a kill is INFO.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

import argparse
import asyncio
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path

from akri.dra.mode import Mode
from akri.sim.soak.harness import Timing
from akri.sim.soak.plan import ALL_KINDS, default_layout, make_plan
from akri.sim.soak.run import print_rows, soak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="akri-soak", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SOAK_SECONDS", 600)))
    seed = os.environ.get("SOAK_SEED")
    parser.add_argument(
        "--seed", type=int, default=int(seed) if seed else random.SystemRandom().randrange(2**32)
    )
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument(
        "--kinds", default=",".join(ALL_KINDS), help="fault kinds to inject (comma-separated)"
    )
    parser.add_argument("--verbose", action="store_true", help="print every event")
    parser.add_argument(
        "--mode",
        choices=[Mode.DEVICE_PLUGIN, Mode.DRA],
        default=os.environ.get("SOAK_MODE", Mode.DEVICE_PLUGIN),
        help="how devices are allocated: device plugins, or DRA (Configuration requests only)",
    )
    parser.add_argument(
        "--log-level",
        default="WARNING",
        help="log level of the agents and controllers (INFO logs every slot freed or recorded)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    logging.getLogger("akri.sim").setLevel(logging.CRITICAL)
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    print(f"soak: seed {args.seed} (replay with SOAK_SEED={args.seed})", flush=True)
    timing = Timing()
    layout = default_layout(
        args.nodes, timing.offline_grace, timing.node_grace, dra=args.mode == Mode.DRA
    )
    plan = make_plan(args.seed, args.seconds, layout, args.kinds.split(","))
    workdir = Path(tempfile.mkdtemp(prefix="akri-soak-", dir="/tmp"))

    def say(line: str) -> None:
        if args.verbose or not line.startswith("event "):
            print(line, flush=True)

    result = asyncio.run(
        soak(args.seed, args.seconds, layout, timing, plan, workdir, say, args.log_level)
    )
    print_rows(result.rows())
    if result.violations:
        print(f"logs kept in {workdir}")
        for violation in result.violations:
            print(f"  {violation}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print(result.table(), flush=True)
    return 1 if result.violations else 0


if __name__ == "__main__":
    sys.exit(main())
