"""Names of plugin sockets: unique per incarnation (Akri #551) and short enough to bind
whatever the resource name.

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
from akri.unix_sockets import MAX_SOCKET_PATH_BYTES

PREFIX_CHARACTERS = 24
"""Of the resource name, kept in the socket name so a person can tell sockets apart."""

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
    """`<start of the resource>-<digest of the resource>-<nonce>.sock`: short whatever the
    resource name (the digest tells two long names apart, the nonce two incarnations).

    Raises ValueError when even that does not fit under `directory`.
    """
    stem = resource.replace("/", "-")[:PREFIX_CHARACTERS].rstrip("-.")
    name = f"{stem}-{digest(resource)}-{nonce}.sock"
    if len(os.fsencode(directory / name)) > MAX_SOCKET_PATH_BYTES:
        raise ValueError(
            f"device-plugin directory {directory} is too long for a socket path "
            f"(at most {MAX_SOCKET_PATH_BYTES} bytes in all)"
        )
    return name
