"""The soak's programs: one process each, as Kubernetes runs one replica per pod."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from akri.sim.soak.harness import Program


async def test_starting_a_running_program_starts_no_second_process(tmp_path: Path) -> None:
    sleeper = [sys.executable, "-c", "import time; time.sleep(600)"]
    program = Program("p", sleeper, dict(os.environ), tmp_path / "p.log", lambda *_: None)
    await program.start()
    first = program.process
    assert first is not None
    try:
        await program.start()
        assert program.process is first
    finally:
        await program.stop()
        if first.returncode is None:  # left behind by a second start
            first.kill()
            await first.wait()
    assert first.returncode is not None
