"""The unix sockets akri-py serves: owner-only, in directories no other user may write.

Anyone who can connect to a plugin socket can take slots, and anyone who can write to its
directory can put a socket of their own in its place; so every socket is owner-only (the
kubelet and the agent run as root) from the moment it appears at its path, in a directory
made owner-only or that no group or other user may write (`akri.owner_only`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import grpc

from akri.owner_only import OWNER_ONLY

UNIX = "unix://"
MAX_SOCKET_PATH_BYTES = 105
"""The longest unix socket path grpcio (1.85) binds; `sun_path` would take 107 bytes."""
LOCAL_PEER_OPTIONS = (("grpc.http2.bdp_probe", 0),)
"""gRPC options for one end of a connection to a peer on the same node. No bandwidth-delay
probing: its PINGs grow the flow-control window for long, fast links; on a unix socket that
carries a few small messages they only cost a PING, its answer and a window update per
connection, which a thousand device plugins dialled at once after a kubelet restart pay a
thousand times (a third of the gRPC threads' CPU on each side)."""


def _add(server: grpc.aio.Server, address: str) -> int:
    try:
        return server.add_insecure_port(address)
    except RuntimeError as error:  # grpc's words, e.g. a path too long for it
        raise OSError(f"cannot serve on {address}: {error}") from None


def add_port(server: grpc.aio.Server, address: str) -> int:
    """`server.add_insecure_port(address)`; a unix socket appears at its path owner-only.

    grpc binds (and listens) in add_insecure_port, with the mode the umask gives: bound at its
    path, a socket could be connected to before a chmod, and the kernel keeps that connection.
    So it is bound in a new directory only we may enter (mode 0700), made owner-only there,
    and renamed into place: a connection goes by the inode, which keeps working. A bind that
    fails raises OSError (grpc's RuntimeError says why).
    """
    if not address.startswith(UNIX):
        return _add(server, address)
    path = Path(address.removeprefix(UNIX))
    private = Path(tempfile.mkdtemp(prefix=".", dir=path.parent))
    try:
        bound = private / "s"  # short: the final path's length is what callers check
        port = _add(server, f"{UNIX}{bound}")
        os.chmod(bound, OWNER_ONLY)
        os.replace(bound, path)
    finally:
        shutil.rmtree(private, ignore_errors=True)
    return port
