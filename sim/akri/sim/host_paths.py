"""Where a simulated node's host directories live on this machine (pure, no I/O).

A hostPath volume, or a plugin endpoint a pod gives by its node path, names the node's
filesystem; each simulated node keeps those directories under its own root.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def node_host_dirs(root: Path) -> dict[str, Path]:
    """The node's kubelet and akri directories, by their path on a node, under `root`."""
    kubelet = root / "kubelet"
    return {
        "/var/lib/kubelet/device-plugins": root / "device-plugins",
        "/var/lib/kubelet/pod-resources": root / "pod-resources",
        "/var/lib/kubelet/plugins_registry": kubelet / "plugins_registry",
        "/var/lib/kubelet/plugins": kubelet / "plugins",
        "/var/run/cdi": kubelet / "cdi",
        "/var/lib/akri": root / "akri",
    }


def local_path(host_dirs: Mapping[str, Path], path: str) -> Path | None:
    """`path` of the node's filesystem inside one of `host_dirs`, here; None when outside all."""
    clean = "/" + path.strip("/")
    for prefix, local in host_dirs.items():
        if clean == prefix or clean.startswith(prefix + "/"):
            return local / clean[len(prefix) :].lstrip("/")
    return None
