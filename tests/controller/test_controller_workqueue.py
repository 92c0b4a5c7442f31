"""The work queue: de-duplicated keys, one worker per key, delayed adds keep the earliest."""

from __future__ import annotations

import asyncio

from akri.controller.workqueue import WorkQueue


async def test_a_key_queued_many_times_is_processed_once() -> None:
    queue: WorkQueue[str] = WorkQueue()
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert len(queue) == 2
    assert [await queue.get(), await queue.get()] == ["a", "b"]
    assert len(queue) == 0


async def test_a_key_added_while_processing_waits_for_done() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    assert len(queue) == 0  # not handed to a second worker while the first has it
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_get_waits_for_an_add() -> None:
    queue: WorkQueue[str] = WorkQueue()
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.add("x")
    assert await waiter == "x"


async def test_add_after_keeps_the_earliest_and_close_cancels() -> None:
    queue: WorkQueue[str] = WorkQueue()
    queue.add_after("a", 60.0)
    queue.add_after("a", 0.01)
    queue.add_after("a", 30.0)  # later than the scheduled one: ignored
    assert await asyncio.wait_for(queue.get(), timeout=10) == "a"
    queue.done("a")
    queue.add_after("b", 0.0)  # no delay: at once
    assert len(queue) == 1
    queue.add_after("c", 60.0)
    queue.close()
    assert len(queue) == 1
