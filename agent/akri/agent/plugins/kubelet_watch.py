"""Notices kubelet restarts by looking at sockets: one cheap stat loop for the whole agent.

A restarting kubelet deletes every socket in the device-plugins directory and serves a new
kubelet.sock; either sign means plugins must register again (the third sign, a cut
ListAndWatch stream, reaches each plugin directly). The standard library has no inotify; a
stat of the directory and of kubelet.sock every 200 ms tells whether anything came or went,
and only then is the directory listed once for every plugin to look for its own socket in (a
stat per plugin would cost 1000 stats a tick while a thousand plugins register again and the
directory keeps changing).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Protocol

log = logging.getLogger(__name__)

Identity = tuple[int, int, int]
"""(device, inode, ctime): a re-created file differs even when the inode number is reused."""

WATCH_INTERVAL_S = 0.2


def socket_identity(path: Path) -> Identity | None:
    """Which file `path` is now, or None when there is none. For a directory the ctime also
    moves whenever an entry is created, deleted or renamed."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_dev, stat.st_ino, stat.st_ctime_ns


def entries(directory: Path) -> frozenset[str]:
    """The names in `directory` now; none when it is missing."""
    try:
        return frozenset(os.listdir(directory))
    except OSError:
        return frozenset()


class Watcher(Protocol):
    def check(self, kubelet: Identity | None, names: Collection[str]) -> None:
        """Look at the kubelet socket's identity and at the names in the directory (is one's
        own socket there?); must not block."""


class KubeletWatch:
    def __init__(self, kubelet_socket: Path, interval: float = WATCH_INTERVAL_S) -> None:
        self.kubelet_socket = kubelet_socket
        self.interval = interval
        self.identity = socket_identity(kubelet_socket)

    async def run(self, watchers: Callable[[], Iterable[Watcher]]) -> None:
        """Every interval, stat the directory and kubelet.sock; when either changed (or the
        set of watchers did), list the directory and let each watcher check. Until cancelled.

        kubelet.sock is looked at on its own as well: a directory's ctime moves in steps of
        the kernel's clock tick, so entries that went and came within one tick can leave it as
        it was; a plugin waiting for a kubelet relies on seeing the new one."""
        seen: tuple[Identity | None, Identity | None, frozenset[int]] | None = None
        while True:
            current = list(watchers())
            # Taken before the checks: a change during them shows up at the next tick.
            directory = socket_identity(self.kubelet_socket.parent)
            kubelet = socket_identity(self.kubelet_socket)
            state = (directory, kubelet, frozenset(map(id, current)))
            if state != seen:
                seen = state
                self._check(kubelet, current)
            await asyncio.sleep(self.interval)

    def _check(self, identity: Identity | None, watchers: Iterable[Watcher]) -> None:
        if identity != self.identity:
            state = "is serving" if identity is not None else "is gone"
            log.info("kubelet socket %s %s", self.kubelet_socket, state)
            self.identity = identity
        names = entries(self.kubelet_socket.parent)
        for watcher in watchers:
            watcher.check(identity, names)
