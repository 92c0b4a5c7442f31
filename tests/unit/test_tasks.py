"""`finish`: cleanup runs to its end however often its caller is cancelled."""

from __future__ import annotations

import asyncio

import pytest

from akri.tasks import finish


async def test_cleanup_runs_to_its_end_through_repeated_cancellation() -> None:
    release = asyncio.Event()
    steps: list[str] = []

    async def cleanup() -> None:
        steps.append("started")
        await release.wait()
        steps.append("done")

    async def stopper() -> None:
        try:
            await asyncio.Event().wait()  # runs until cancelled
        finally:
            await finish(cleanup())

    task = asyncio.create_task(stopper())
    await asyncio.sleep(0)  # the stopper waits
    task.cancel()
    await asyncio.sleep(0)  # it starts its cleanup...
    task.cancel()  # ...and is cancelled again before the cleanup's first step
    await asyncio.sleep(0)
    task.cancel()  # and once more while the cleanup waits
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert steps == ["started", "done"]


async def test_outcomes_are_left_to_their_owners() -> None:
    async def fails() -> None:
        raise ValueError("boom")

    failing = asyncio.ensure_future(fails())
    await finish(failing, asyncio.sleep(0))
    assert isinstance(failing.exception(), ValueError)
