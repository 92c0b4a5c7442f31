"""Each bundled handler's discoveryDetails parser, by handler name.

The one source of truth for what a handler accepts: the handlers call these same functions
before discovering, and the controller's admission webhook calls them to refuse a Configuration
at `kubectl apply` time, so both always agree. Each raises `InvalidDetails` naming the problem.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from akri.discovery_handlers import debug_echo
from akri.discovery_handlers.mdns import service as mdns
from akri.discovery_handlers.onvif import camera as onvif
from akri.discovery_handlers.opcua import servers as opcua
from akri.discovery_handlers.udev import devices as udev

DETAILS_PARSERS: Mapping[str, Callable[[str], object]] = {
    debug_echo.NAME: debug_echo.parse_details,
    udev.NAME: udev.details_of,
    onvif.NAME: onvif.details_of,
    mdns.NAME: mdns.details_of,
    opcua.NAME: opcua.details_of,
}
