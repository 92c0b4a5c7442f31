"""What happens to the entries of one directory, from the kernel's inotify (Linux), by name.

An entry that is created at its path with a lax mode and then chmodded shows IN_ATTRIB; one
made elsewhere with its final mode and renamed in shows IN_MOVED_TO only. That difference is
what the file-mode tests assert, without racing a chmod.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
from pathlib import Path
from types import TracebackType

IN_ATTRIB = 0x004
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
_IN_NONBLOCK = os.O_NONBLOCK
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


class Watch:
    """`with Watch(directory) as watch:` ... then `watch.events()`: (name, mask) pairs."""

    def __init__(self, directory: Path) -> None:
        self._directory = directory
        self._fd = -1

    def __enter__(self) -> Watch:
        self._fd = _libc.inotify_init1(_IN_NONBLOCK)
        if self._fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        mask = IN_ATTRIB | IN_MOVED_TO | IN_CREATE
        if _libc.inotify_add_watch(self._fd, str(self._directory).encode(), mask) < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {self._directory}")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        os.close(self._fd)

    def events(self) -> list[tuple[str, int]]:
        """Every event queued so far (the kernel queues them as they happen)."""
        found: list[tuple[str, int]] = []
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return found
            offset = 0
            while offset < len(data):
                _, mask, _, length = _HEADER.unpack_from(data, offset)
                start = offset + _HEADER.size
                name = data[start : start + length].rstrip(b"\0").decode()
                found.append((name, mask))
                offset = start + length


def touched(events: list[tuple[str, int]], name: str, mask: int) -> bool:
    return any(n == name and m & mask for n, m in events)
