"""Constants of the device plugin API that live in Go code, not in the .proto file."""

from __future__ import annotations

from typing import Final

VERSION: Final = "v1beta1"
"""The only `RegisterRequest.version` a kubelet accepts."""
SUPPORTED_VERSIONS: Final = (VERSION,)

HEALTHY: Final = "Healthy"
UNHEALTHY: Final = "Unhealthy"
"""`Device.health` values: plain strings, not an enum."""

DEVICE_PLUGIN_PATH: Final = "/var/lib/kubelet/device-plugins/"
"""Where plugins put their sockets; the kubelet joins `RegisterRequest.endpoint` to it."""
KUBELET_SOCKET_NAME: Final = "kubelet.sock"
"""The kubelet's Registration server, in DEVICE_PLUGIN_PATH."""
