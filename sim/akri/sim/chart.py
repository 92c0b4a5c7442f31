"""What `akri sim --chart` installs: the chart's values for the local cluster (pure).

The values are the README's `helm install` (the agent's embedded debugEcho and the debugEcho
example), and the agents may read Secrets named in discoveryProperties, as the ONVIF example
(crds/examples/onvif.yaml) needs; nothing is changed for the simulation's sake.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

RELEASE: Final = "akri"
NAMESPACE: Final = "akri"
EXAMPLE: Final[Mapping[str, Any]] = {
    "agent": {"embedDebugEcho": True, "discoveryPropertiesFrom": {"secrets": True}},
    "examples": {"debugEcho": {"enabled": True}},
}


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` over `base`, maps merged key by key as Helm merges values files."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out.get(key, {}), value) if isinstance(value, Mapping) else value
    return out


def values(*, offline_grace_s: float) -> dict[str, Any]:
    """The local cluster's values: the example and the agents' offline grace."""
    return merged(EXAMPLE, {"agent": {"offlineGrace": f"{offline_grace_s:g}s"}})


def example_beside(chart: Path) -> Path:
    """The debugEcho example of the checkout holding `chart` (helm/akri): what runs instead of
    the chart's own example where the chart's pods cannot run."""
    return chart.resolve().parents[1] / "crds" / "examples" / "debugEcho.yaml"
