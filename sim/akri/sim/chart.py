"""What `akri sim --chart` installs: the chart's values for the local cluster (pure).

The values are the README's `helm install` (the agent's embedded debugEcho and the debugEcho
example), and the agents may read Secrets named in discoveryProperties, as the ONVIF example
(crds/examples/onvif.yaml) needs. When pods share the host's network, each listener of the
chart's pods needs a port no other pod uses, so one agent and one controller, each on its own
telemetry port.
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
SHARED_NETWORK: Final[Mapping[str, Any]] = {
    "agent": {"metricsPort": 18380},
    "controller": {"replicas": 1, "metricsPort": 18381},
}
"""What pods sharing the host's network cannot run as the chart's defaults run them."""


def merged(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` over `base`, maps merged key by key as Helm merges values files."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = merged(out.get(key, {}), value) if isinstance(value, Mapping) else value
    return out


def values(*, offline_grace_s: float, shared_network: bool) -> dict[str, Any]:
    """The local cluster's values: the example, the agents' offline grace, and what pods that
    share the host's network need."""
    chosen = merged(EXAMPLE, {"agent": {"offlineGrace": f"{offline_grace_s:g}s"}})
    return merged(chosen, SHARED_NETWORK) if shared_network else chosen


def example_beside(chart: Path) -> Path:
    """The debugEcho example of the checkout holding `chart` (helm/akri): what runs instead of
    the chart's own example where the chart's pods cannot run."""
    return chart.resolve().parents[1] / "crds" / "examples" / "debugEcho.yaml"
