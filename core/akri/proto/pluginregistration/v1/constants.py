"""Constants of the plugin registration API that live in Go code, not in the .proto file."""

from __future__ import annotations

from typing import Final

CSI_PLUGIN: Final = "CSIPlugin"
DEVICE_PLUGIN: Final = "DevicePlugin"
DRA_PLUGIN: Final = "DRAPlugin"
"""`PluginInfo.type` values the kubelet has handlers for."""
