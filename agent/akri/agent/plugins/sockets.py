"""Names of plugin sockets: unique per incarnation (Akri #551) and short enough to bind.

A kubelet keeps dialling the endpoint it was last given; a plugin that re-served on the same
name could be mistaken for its previous incarnation, so every incarnation gets a new nonce.
"""

from __future__ import annotations

import itertools
import os
import string
import time
from pathlib import Path

from akri.naming import digest

MAX_SOCKET_PATH_BYTES = 107
"""A unix socket path must fit `sun_path` (108 bytes) with its terminating NUL."""

_DIGITS = string.digits + string.ascii_lowercase
# Starting from the clock keeps names fresh across agent restarts, counting keeps them distinct.
_nonces = itertools.count(time.time_ns())


def _base36(number: int) -> str:
    text = ""
    while True:
        number, digit = divmod(number, len(_DIGITS))
        text = _DIGITS[digit] + text
        if not number:
            return text


def new_nonce() -> str:
    """A token no earlier incarnation in this or a previous agent process used."""
    return _base36(next(_nonces))


def socket_name(directory: Path, resource: str, nonce: str) -> str:
    """`<resource with / as ->-<nonce>.sock`, shortened (with a digest) when the path is too long.

    Raises ValueError when even the shortest name does not fit under `directory`.
    """
    stem = resource.replace("/", "-")
    room = MAX_SOCKET_PATH_BYTES - len(os.fsencode(directory)) - 1 - len(f"-{nonce}.sock")
    if len(stem.encode()) > room:
        tag = digest(resource)
        stem = f"{stem[: max(room - len(tag) - 1, 0)]}-{tag}".lstrip("-")
        if len(stem.encode()) > room:
            raise ValueError(f"device-plugin directory {directory} is too long for a socket path")
    return f"{stem}-{nonce}.sock"
