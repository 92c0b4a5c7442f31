"""A minute of the chaos soak (`make soak` runs ten): slow, so only in `make test-slow`."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("mode", ["device-plugin", "dra"])
def test_a_minute_of_chaos_breaks_no_invariant(mode: str) -> None:
    """Each run draws a new seed; a failure prints it, and SOAK_SEED=<seed> replays the run."""
    run = subprocess.run(
        [sys.executable, "-m", "akri.sim.soak", "--seconds", "60", "--mode", mode],
        capture_output=True,
        text=True,
        timeout=850,
        check=False,
    )
    lines = run.stdout.strip().splitlines()
    assert lines[0].startswith("soak: seed "), run.stderr[-3000:]
    assert lines[-1] == "violations: 0", run.stdout[-6000:]
    assert run.returncode == 0
