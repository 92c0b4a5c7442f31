"""Suite-wide hygiene: a test that leaves threads, child processes, tasks or sockets behind fails.

Leaks are checked after the test's own fixtures are torn down, with a short deadline for
things that finish asynchronously (threads joining, sockets closing), never a fixed sleep.
"""

from __future__ import annotations

from akri.kube import lean

lean.install()  # before anything imports kubernetes_asyncio: the tests run it as the programs do

import asyncio
import gc
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from kubernetes_asyncio import client, config

from akri.api import crd_definitions
from akri.sim.apiserver import ApiServer

LEAK_DEADLINE_S = (
    15.0  # generous: a loaded machine closes things late; only a real leak waits it out
)
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
        # grpc.aio keeps its poller thread and wake-up sockets while any channel or server
        # object is alive, even a closed one; aborted RPCs and tracebacks leave such objects
        # in reference cycles that only the cyclic collector frees. Collected only while
        # something is left: a collection per test would cost minutes over the suite.
        gc.collect()
        time.sleep(0.02)
    return remaining


@pytest.fixture(autouse=True)
def no_leaked_threads_processes_or_sockets(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    threads = set(threading.enumerate())
    sockets = _socket_inodes()
    children = _child_pids()
    yield
    # A captured record's exc_info keeps the frames of its traceback alive (grpc channels in
    # their locals among them); the report keeps the text, already formatted.
    for when in ("setup", "call"):
        for record in caplog.get_records(when):
            record.exc_info = None
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
async def no_leaked_tasks(no_leaked_threads_processes_or_sockets: None) -> AsyncIterator[None]:
    """Torn down before the thread check it depends on, so the executor is gone by then."""
    yield
    # aiohttp (inside kubernetes-asyncio) resolves proxies in the loop's default executor.
    await asyncio.get_running_loop().shutdown_default_executor()
    current = asyncio.current_task()
    pending = {task for task in asyncio.all_tasks() if task is not current and not task.done()}
    if pending:
        # grpc.aio's server finishes the task of an RPC it answered just after stop() returns:
        # only a task still running after a moment is left behind.
        _, pending = await asyncio.wait(pending, timeout=LEAK_DEADLINE_S)
    if pending:
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    assert not pending, f"tasks left running: {sorted(t.get_name() for t in pending)}"


@pytest.fixture(autouse=True)
def root_logging_restored() -> Iterator[None]:
    """Programs' main() configure the root logger for their process; under pytest that would
    leave a handler on a captured stream that is closed after the test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A short directory for unix sockets: pytest's tmp_path can exceed the 105 bytes grpc binds."""
    path = Path(tempfile.mkdtemp(prefix="akri-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def apiserver() -> AsyncIterator[ApiServer]:
    """An emulated Kubernetes API server with the project's CRDs registered."""
    async with ApiServer() as server:
        await server.apply_definitions(crd_definitions())
        yield server


@pytest.fixture
async def api(apiserver: ApiServer, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """A kubernetes-asyncio client of `apiserver`, loaded from a kubeconfig like a user's."""
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = await config.new_client_from_config(
        config_file=str(kubeconfig), persist_config=False
    )
    async with api_client:
        yield api_client
