"""Files and directories on the node that only their owner (root, for the agent) may touch.

Keys, checkpoints, CDI specs and sockets decide what reaches containers and who may take
slots: a user who could write one, or replace it in its directory, could do the same. So
files are owner-only from the moment they exist (created so, never chmodded after: a file
opened in between stays open), new directories are owner-only, and directories that a group
or every user may write are refused with a message saying so.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

OWNER_ONLY = 0o600
PRIVATE_DIRECTORY = 0o700


def directory_problem(directory: Path) -> str | None:
    """Why nothing of ours may be kept in `directory`, or None. A missing one is made later,
    owner-only, so it is fine."""
    try:
        mode = directory.stat().st_mode
    except FileNotFoundError:
        return None
    if mode & (stat.S_IWOTH | stat.S_IWGRP):
        who = "every user" if mode & stat.S_IWOTH else "its group"
        return (
            f"{directory} is writable by {who} (mode {stat.filemode(mode)}): they could "
            "replace the sockets or files kept there; allow writes by its owner only "
            "(chmod go-w)"
        )
    return None


def make_directory(directory: Path) -> None:
    """`directory` and its missing parents, owner-only when new; OSError when others may
    write it."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    for new in reversed(missing):  # mkdir(parents=True) would make the parents 0777 - umask
        new.mkdir(mode=PRIVATE_DIRECTORY, exist_ok=True)
    if (problem := directory_problem(directory)) is not None:
        raise OSError(problem)


def write_atomically(path: Path, content: bytes) -> None:
    """`path` holds `content`, owner-only: readers see the old or the new file, never a part.

    The temporary file is created with its final mode and never follows a link; its name
    starts with a dot, so no reader of the directory (a CDI runtime) takes it for its own.
    """
    make_directory(path.parent)
    aside = path.with_name(f".{path.name}.tmp")
    aside.unlink(missing_ok=True)  # left by a crash
    flags = os.O_CREAT | os.O_WRONLY | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(aside, flags, OWNER_ONLY), "wb") as stream:
        stream.write(content)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(aside, path)
