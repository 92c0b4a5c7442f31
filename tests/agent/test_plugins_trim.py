"""Memory given back once a burst of plugin work is over."""

from __future__ import annotations

import asyncio

from akri.agent.plugins.trim import AfterBurst, malloc_trim


async def test_a_burst_runs_the_action_once_after_its_last_step() -> None:
    runs: list[int] = []
    ran = asyncio.Event()

    def action() -> None:
        runs.append(1)
        ran.set()

    burst = AfterBurst(action, quiet=0.01)
    for _ in range(100):
        burst.touch()
    async with asyncio.timeout(10):
        await ran.wait()
    assert runs == [1]


def test_without_an_action_touching_does_nothing() -> None:
    """Not even a timer: outside an event loop, scheduling one would raise."""
    AfterBurst(None).touch()


def test_this_c_library_trims() -> None:
    """The test machines run glibc, as the agent's image does."""
    trim = malloc_trim()
    assert trim is not None
    trim()
