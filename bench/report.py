"""`make report`: run every benchmark and the soak smoke run, write docs/performance.md and
the table of targets in README.md.

Each program prints its rows as `report: {json}` lines (`akri.sim.report`); their other output
is passed through so a person sees progress. The page records when and on what machine the
numbers were taken (CPU count and load, since the machine may be shared), and a program that
failed or printed no rows shows as such in the table; the command then exits 1.

Run: `python bench/report.py [--output docs/performance.md] [--readme README.md]
[--soak-seconds 60]`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from akri.sim.report import Row, markdown, rows_in, with_targets

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OURS_PER_POD = (
    "bench_agent_contention",
    "realistic: CPU of the agents' processes / of this process, per pod",
)
"""The row bench_protocol_floor compares its floor with, when this report measured it."""


@dataclass(frozen=True)
class Outcome:
    source: str
    rows: list[Row]
    seconds: float
    exit_code: int


def run(source: str, command: list[str], env: dict[str, str] | None = None) -> Outcome:
    """Run one program, echoing its output, and collect its rows."""
    print(f"== {source}: {' '.join(command)}", flush=True)
    began = time.monotonic()
    process = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}
    )
    assert process.stdout is not None
    captured = []
    for line in process.stdout:
        sys.stdout.write(line)
        captured.append(line)
    exit_code = process.wait()
    rows = rows_in("".join(captured))
    if exit_code != 0:
        rows.append(Row("run", f"FAILED (exit {exit_code})"))
    elif not rows:
        rows.append(Row("run", "printed no report rows"))
    return Outcome(source, rows, time.monotonic() - began, exit_code)


def floor_arguments(done: list[Outcome]) -> list[str]:
    """bench_protocol_floor's `--ours`: our CPU per pod from this report's own contention run
    (it runs first, in name order), so that floor and ours come from one state of the host."""
    for outcome in done:
        for row in outcome.rows:
            if (outcome.source, row.metric) == OURS_PER_POD:
                agents, emulators = (part.split()[0] for part in row.value.split(" / "))
                return ["--ours", agents, emulators]
    return []


def taken(began: datetime, loads: tuple[str, str]) -> str:
    return (
        f"taken {began:%Y-%m-%d %H:%M} UTC on {os.cpu_count()} CPUs; load average "
        f"(1, 5, 15 min) {loads[0]} at the start, {loads[1]} at the end"
    )


def page(outcomes: list[Outcome], began: datetime, loads: tuple[str, str]) -> str:
    runs = ", ".join(f"{o.source} {o.seconds:.0f} s" for o in outcomes)
    return "\n".join(
        [
            "# Performance",
            "",
            "Written by `make report` (`bench/report.py`), which runs every benchmark in `bench/`",
            "and a soak smoke run (`make soak` runs the long one); do not edit by hand. Targets",
            "are shown, never asserted:",
            "the tests check behaviour, these numbers measure it.",
            "",
            f"- {taken(began, loads)}",
            f"- run times: {runs}",
            "",
            markdown((o.source, o.rows) for o in outcomes),
        ]
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    parser.add_argument("--soak-seconds", type=int, default=60)
    args = parser.parse_args()
    began, start_load = datetime.now(UTC), load_average()
    outcomes: list[Outcome] = []
    for path in sorted(BENCH.glob("bench_*.py")):
        extra = floor_arguments(outcomes) if path.stem == "bench_protocol_floor" else []
        outcomes.append(run(path.stem, [sys.executable, str(path), *extra]))
    soak = [sys.executable, "-m", "akri.sim.soak", "--seconds", str(args.soak_seconds)]
    outcomes.append(run("soak", soak))
    loads = (start_load, load_average())
    args.output.write_text(page(outcomes, began, loads))
    targets = markdown(((o.source, o.rows) for o in outcomes), targets_only=True)
    args.readme.write_text(
        with_targets(
            args.readme.read_text(), targets, f"Last `make report`: {taken(began, loads)}."
        )
    )
    print(f"wrote {args.output} and the targets in {args.readme}")
    return 0 if all(o.exit_code == 0 for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
