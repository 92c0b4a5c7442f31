"""What the DRA plugin prepared, on disk, so prepare and unprepare stay idempotent across
restarts of the agent and of the kubelet.

A JSON file of claim uid -> {namespace, name, devices (the kubelet's answer), spec (the CDI
spec)}, replaced atomically (write aside, fsync, rename). A file that cannot be read is moved
aside with an error logged: unpreparing still works without it (a claim's CDI file is found by
its uid), and a claim prepared again is recomputed from the API.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from akri import owner_only

log = logging.getLogger(__name__)

JSON = dict[str, Any]
FILE_NAME = "checkpoint.json"


def write_atomically(path: Path, text: str) -> None:
    """`path` holds `text`, owner-only, never seen half-written (`akri.owner_only`)."""
    owner_only.write_atomically(path, text.encode())


def load(path: Path) -> dict[str, JSON]:
    """The prepared claims by uid; empty when there is no usable checkpoint."""
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError("not an object of claims")
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        aside = path.with_name(f"{path.name}.corrupt")
        log.error("DRA checkpoint %s unusable (%s); moved to %s", path, error, aside)
        path.replace(aside)
        return {}
    return data


def save(path: Path, claims: dict[str, JSON]) -> None:
    write_atomically(path, json.dumps(claims, sort_keys=True, indent=1))
