"""Whose CPU is it: the agent's or the emulators' sharing its process?

Benchmarks that run agents, the API emulator and kubelet emulators on one event loop measure
all of them at once. This samples the process's CPU (SIGPROF every `interval` of CPU time, all
threads) and charges each sample to the outermost akri frame on the main thread's stack: code
under agent/ (and the core code it calls) is the agent's, sim/ the emulators', bench/ the
benchmark's own client (it plays the kubelet's calls), except that what an emulator does when
the benchmark calls it (a kubelet emulator admitting the benchmark's pod) is the emulator's. A
coroutine resumed by its task has its whole await chain on the stack, so a task is charged to
whoever started it. Samples with no akri frame (the event loop, aiohttp and grpc parsing and
I/O) are shown as unattributed.

Not used by the product; a benchmark aid. Overhead: one Python signal handler per sample.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
COMPONENTS = {
    ROOT / "agent": "agent",
    ROOT / "controller": "controller",
    ROOT / "sim": "emulators",
    ROOT / "bench": "benchmark client",
}
BENCHMARK = COMPONENTS[ROOT / "bench"]
CORE = ROOT / "core"
EVENT_LOOP = "asyncio/events.py"
"""Handle._run: every callback and task step starts there."""
UNATTRIBUTED = "event loop and libraries (unattributed)"


def _component(frame: FrameType | None) -> str:
    """The component of the outermost frame of ours below the event loop (which runs the
    callback or task step), the benchmark's only if no other component's frame is on the
    stack; core code counts for the caller."""
    found, by_core = UNATTRIBUTED, False
    while frame is not None:
        path = frame.f_code.co_filename
        if path.endswith(EVENT_LOOP):
            break
        for root, name in COMPONENTS.items():
            if path.startswith(str(root)) and "/_attribution.py" not in path:
                if name != BENCHMARK or found == UNATTRIBUTED or by_core:
                    found, by_core = name, False
                break
        else:
            if found == UNATTRIBUTED and path.startswith(str(CORE)):
                found, by_core = "agent", True  # core code without an outer frame: the agent's
        frame = frame.f_back
    return found


class CpuShare:
    """CPU samples by component while `sampling()` is active."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval = interval
        self.samples: Counter[str] = Counter()

    @contextlib.contextmanager
    def sampling(self) -> Iterator[CpuShare]:
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("CPU attribution samples the main thread's stack")

        def sample(signum: int, frame: FrameType | None) -> None:
            self.samples[_component(frame)] += 1

        previous = signal.signal(signal.SIGPROF, sample)
        signal.setitimer(signal.ITIMER_PROF, self.interval, self.interval)
        try:
            yield self
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0, 0)
            signal.signal(signal.SIGPROF, previous)

    def seconds(self) -> dict[str, float]:
        """CPU seconds per component (samples times the interval), largest first."""
        return {name: n * self.interval for name, n in self.samples.most_common()}

    def summary(self) -> str:
        total = sum(self.samples.values()) or 1
        return ", ".join(
            f"{name} {n * self.interval:.2f} s ({n / total:.0%})"
            for name, n in self.samples.most_common()
        )
