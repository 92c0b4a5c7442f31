"""The container runtime's part of CDI: resolving device ids against the spec files of the CDI
directory and applying their edits (env, mounts, device nodes) to a container.

Rules from the CDI specification and its reference library (container-device-interface,
pkg/cdi/cache.go): a fully qualified id is `<vendor>/<class>=<name>`; specs are the `.json`
files of the spec directories (YAML too upstream; only JSON is read here, which is what
akri-py writes); a device's edits and its spec's top-level edits both apply; an id no spec
defines fails the container ("unresolvable CDI devices").
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

JSON = dict[str, Any]


class UnresolvableDevices(Exception):
    """The runtime cannot create the container: some CDI ids are defined nowhere."""


@dataclass
class Edits:
    """What the container gets besides its own spec."""

    env: dict[str, str] = field(default_factory=dict)
    mounts: list[JSON] = field(default_factory=list)
    device_nodes: list[JSON] = field(default_factory=list)

    def apply(self, edits: JSON) -> None:
        for entry in edits.get("env") or []:
            key, _, value = str(entry).partition("=")
            self.env[key] = value
        self.mounts.extend(edits.get("mounts") or [])
        self.device_nodes.extend(edits.get("deviceNodes") or [])

    def to_json(self) -> JSON:
        return {"env": self.env, "mounts": self.mounts, "deviceNodes": self.device_nodes}


def _specs(directories: Iterable[Path]) -> list[JSON]:
    found = []
    for directory in directories:
        for path in sorted(directory.glob("*.json")) if directory.is_dir() else []:
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError) as error:  # the runtime skips a broken spec
                log.warning("CDI spec %s skipped: %s", path, error)
    return found


def resolve(directories: Sequence[Path], ids: Sequence[str]) -> Edits:
    """The edits of `ids`, in order; UnresolvableDevices names those defined nowhere."""
    devices: dict[str, tuple[JSON, JSON]] = {}
    for spec in _specs(directories):
        for device in spec.get("devices") or []:
            devices[f"{spec.get('kind')}={device.get('name')}"] = (spec, device)
    missing = [i for i in ids if i not in devices]
    if missing:
        raise UnresolvableDevices(f"unresolvable CDI devices {', '.join(missing)}")
    edits = Edits()
    applied_specs: list[int] = []
    for cdi_id in ids:
        spec, device = devices[cdi_id]
        if id(spec) not in applied_specs:
            applied_specs.append(id(spec))
            edits.apply(spec.get("containerEdits") or {})
        edits.apply(device.get("containerEdits") or {})
    return edits
