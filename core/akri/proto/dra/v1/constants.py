"""Constants of the DRA plugin API that live in Go code, not in the .proto file."""

from __future__ import annotations

from typing import Final

DRA_PLUGIN_SERVICE: Final = "v1.DRAPlugin"
"""How a plugin names this service in `PluginInfo.supported_versions`
(`<last part of the proto package>.<service>`)."""
HEALTH_SERVICE: Final = "v1alpha1.DRAResourceHealth"
"""The optional device health service, named the same way."""
