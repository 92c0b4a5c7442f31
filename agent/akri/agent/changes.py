"""A notice that something changed, for followers that read it again when it does.

The producer is built with its `Changes` and calls `changed()`; a follower is built with it
too and listens while it runs (`listening`), so neither needs the other to exist first and
nothing is wired up after construction: the Configurations and the device plugins or the
ResourceSlices, the prepared claims and the ResourceSlices.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator


class Changes:
    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []

    def changed(self) -> None:
        """Tell every listener now (each only notes it, e.g. sets an event)."""
        for listener in tuple(self._listeners):
            listener()

    @contextlib.contextmanager
    def listening(self, listener: Callable[[], None]) -> Iterator[None]:
        """Call `listener` at each change while the context lasts."""
        self._listeners.append(listener)
        try:
            yield
        finally:
            self._listeners.remove(listener)
