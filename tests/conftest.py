"""Suite-wide hygiene: a test that leaves threads, child processes, tasks or sockets behind fails.

Leaks are checked after the test's own fixtures are torn down, with a short deadline for
things that finish asynchronously (threads joining, sockets closing), never a fixed sleep.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

LEAK_DEADLINE_S = 5.0
T = TypeVar("T")


def _socket_inodes() -> set[str]:
    inodes = set()
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue  # closed while iterating
        if target.startswith("socket:"):
            inodes.add(target)
    return inodes


def _child_pids() -> set[int]:
    pids: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.update(int(pid) for pid in (task / "children").read_text().split())
        except OSError:
            continue
    return pids


def _wait_until_clean(leftovers: Callable[[], set[T]]) -> set[T]:
    deadline = time.monotonic() + LEAK_DEADLINE_S
    while (remaining := leftovers()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return remaining


@pytest.fixture(autouse=True)
def no_leaked_threads_processes_or_sockets() -> Iterator[None]:
    threads = set(threading.enumerate())
    sockets = _socket_inodes()
    children = _child_pids()
    yield
    leaked_threads = _wait_until_clean(
        lambda: {t for t in threading.enumerate() if t not in threads and t.is_alive()}
    )
    leaked_children = _wait_until_clean(lambda: _child_pids() - children)
    leaked_sockets = _wait_until_clean(lambda: _socket_inodes() - sockets)
    problems = []
    if leaked_threads:
        problems.append(f"threads left running: {sorted(t.name for t in leaked_threads)}")
    if leaked_children:
        problems.append(f"child processes left running: {sorted(leaked_children)}")
    if leaked_sockets:
        problems.append(f"{len(leaked_sockets)} socket(s) left open")
    assert not problems, "; ".join(problems)


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    yield
    current = asyncio.current_task()
    pending = {task for task in asyncio.all_tasks() if task is not current and not task.done()}
    if pending:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    assert not pending, f"tasks left running: {sorted(t.get_name() for t in pending)}"
