"""The unix sockets akri-py serves: owner-only, in directories no other user may write.

Anyone who can connect to a plugin socket can take slots, and anyone who can write to its
directory can put a socket of their own in its place; so every socket is made owner-only
(the kubelet and the agent run as root) before its server accepts a connection, and the agent
refuses directories that every user may write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import grpc

OWNER_ONLY = 0o600
UNIX = "unix://"
MAX_SOCKET_PATH_BYTES = 105
"""The longest unix socket path grpcio (1.85) binds; `sun_path` would take 107 bytes."""
LOCAL_PEER_OPTIONS = (("grpc.http2.bdp_probe", 0),)
"""gRPC options for one end of a connection to a peer on the same node. No bandwidth-delay
probing: its PINGs grow the flow-control window for long, fast links; on a unix socket that
carries a few small messages they only cost a PING, its answer and a window update per
connection, which a thousand device plugins dialled at once after a kubelet restart pay a
thousand times (a third of the gRPC threads' CPU on each side)."""


def add_port(server: grpc.aio.Server, address: str) -> int:
    """`server.add_insecure_port(address)`; a unix socket becomes owner-only at once.

    grpc binds in add_insecure_port but accepts only once started, so the mode is set before
    anyone can be served. A bind that fails raises OSError (grpc's RuntimeError says why).
    """
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as error:  # grpc's words, e.g. a path too long for it
        raise OSError(f"cannot serve on {address}: {error}") from None
    if address.startswith(UNIX):
        os.chmod(address.removeprefix(UNIX), OWNER_ONLY)
    return port


def directory_problem(directory: Path) -> str | None:
    """Why sockets must not be served in `directory`, or None. A missing one is made later
    with the process's own permissions, so it is fine."""
    try:
        mode = directory.stat().st_mode
    except FileNotFoundError:
        return None
    if mode & stat.S_IWOTH:
        return (
            f"{directory} is writable by every user (mode {stat.filemode(mode)}): anyone could "
            "replace the sockets served there; allow writes by its owner only (chmod o-w)"
        )
    return None
