"""The simulator's own network namespace, entered before anything else runs.

`enter` binds the API server's port on this machine's loopback (for the user's kubectl), then
moves the process into a new network namespace with the bridge, each node's gateway address
and the `kubernetes` Service's address, where the simulator and every pod live. Nothing of
this machine's network changes; the namespace, the bridge and the pods' veth pairs vanish with
the process. Where that cannot be done, `Unavailable` says why and nothing has changed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from akri.sim.apiserver.kubernetes_service import SERVICE_IP
from akri.sim.podnet.addresses import BRIDGE, BRIDGE_MAC, NODE_PREFIX, NodeNetwork

CLONE_NEWNET: Final = 0x40000000
TOOLS: Final = ("unshare", "nsenter", "setpriv", "ip", "sleep")
_PROBE_LINK: Final = "akri-probe0"


class Unavailable(Exception):
    """Pods cannot get their own network here; the message says why."""


@dataclass
class ClusterNetwork:
    """The pod network the process now lives in."""

    listener: socket.socket
    """The API server's port on this machine's loopback, bound before the move."""
    nodes: list[NodeNetwork]

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])


def missing() -> str | None:
    """Why this machine cannot make pod networks, or None when it can."""
    if os.geteuid() != 0:
        return "not root"
    for tool in TOOLS:
        if shutil.which(tool) is None:
            return f"{tool} not found"
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        return f"{threads} threads run already (a network namespace is per thread)"
    return None


def _namespace_call(name: str, *args: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if getattr(libc, name)(*args) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{name}: {os.strerror(errno)}")


def _configure(node_count: int) -> list[NodeNetwork]:
    """Loopback, the bridge with each node's gateway, the Service address, forwarding; and a
    veth pair made and deleted, to know pods can be wired."""
    nodes = [NodeNetwork(index) for index in range(node_count)]
    commands = [
        "link set lo up",
        f"address add {SERVICE_IP}/32 dev lo",
        f"link add {BRIDGE} address {BRIDGE_MAC} type bridge",
        f"link set {BRIDGE} up",
        *(f"address add {node.gateway}/{NODE_PREFIX} dev {BRIDGE}" for node in nodes),
        f"link add {_PROBE_LINK} type veth peer name {_PROBE_LINK}p",
        f"link delete {_PROBE_LINK}",
    ]
    done = subprocess.run(
        ["ip", "-batch", "-"],
        input="\n".join(commands) + "\n",
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise OSError(done.stderr.strip() or f"ip exited with {done.returncode}")
    Path("/proc/sys/net/ipv4/ip_forward").write_text("1\n")  # this namespace's: pod to pod
    return nodes


def enter(node_count: int, port: int = 0, host: str = "127.0.0.1") -> ClusterNetwork:
    """Bind `host`:`port` here, then move into the cluster's network namespace and set it up.

    Raises Unavailable (the process still in this machine's namespace, nothing bound) when
    pods cannot get their own network; OSError when the port is taken."""
    reason = missing()
    if reason is not None:
        raise Unavailable(reason)
    listener = socket.create_server((host, port))
    original = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        _namespace_call("unshare", CLONE_NEWNET)
        try:
            nodes = _configure(node_count)
        except (OSError, ValueError) as error:
            _namespace_call("setns", original, CLONE_NEWNET)
            raise Unavailable(str(error)) from error
    except OSError as error:
        listener.close()
        raise Unavailable(str(error)) from error
    except Unavailable:
        listener.close()
        raise
    finally:
        os.close(original)
    return ClusterNetwork(listener, nodes)
