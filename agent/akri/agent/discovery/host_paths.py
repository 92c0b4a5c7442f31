"""Which host paths a discovered device may hand a broker container.

A handler (an external one is any process that can reach the registration socket) names the
device nodes and host directories its devices need; the kubelet then gives them to broker
pods that no admission control sees. So device nodes must be under /dev, and mounts under a
directory the operator allowed (`ALLOWED_MOUNT_PATHS`, none by default), both judged after
`..` and symlinks are resolved as this agent sees the node's filesystem. A device that asks
for anything else is left out, and the Configuration says which path was refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from akri.discovery.model import Device

DEVICE_ROOT = Path("/dev")


def resolved(path: str) -> Path | None:
    """The absolute path `path` names once `..` and symlinks are followed; None when it is
    relative (nothing to anchor it to)."""
    return Path(os.path.realpath(path)) if os.path.isabs(path) else None


def _under(path: str, root: Path, itself: bool) -> bool:
    target = resolved(path)
    return target is not None and (root in target.parents or (itself and target == root))


def refusal(device: Device, allowed_mounts: Sequence[Path]) -> str | None:
    """Why the device may not be offered (the first path refused), or None."""
    for spec in device.device_specs:
        if not _under(spec.host_path, DEVICE_ROOT, itself=False):
            return (
                f"device {device.id!r}: device node {spec.host_path!r} refused: it is not "
                f"under {DEVICE_ROOT} once links are followed"
            )
    for mount in device.mounts:
        if not any(_under(mount.host_path, root, itself=True) for root in allowed_mounts):
            allowed = ", ".join(str(r) for r in allowed_mounts) or "none"
            return (
                f"device {device.id!r}: mount of host path {mount.host_path!r} refused: it is "
                f"not under a directory the agent allows (allowed: {allowed})"
            )
    return None


def admitted(
    devices: Iterable[Device], allowed_mounts: Sequence[Path]
) -> tuple[list[Device], list[str]]:
    """The devices whose paths are all allowed, and why each other one is not."""
    kept, refused = [], []
    for device in devices:
        if (reason := refusal(device, allowed_mounts)) is None:
            kept.append(device)
        else:
            refused.append(reason)
    return kept, refused
