"""Pure: what the handler reads from the ONVIF answers zeep decoded.

Answers are read by attribute, tolerating anything a camera left out (zeep gives None for a
missing optional element): a value that cannot be read is simply unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

MAX_LABEL = 128
"""Characters kept of a camera's self-description: real ones are short, the schema sets no bound,
and each becomes an Instance property and a broker's environment variable."""

# GetDeviceInformation's answer elements, by the property suffix each becomes.
DEVICE_INFORMATION = {
    "MANUFACTURER": "Manufacturer",
    "MODEL": "Model",
    "FIRMWARE_VERSION": "FirmwareVersion",
    "SERIAL_NUMBER": "SerialNumber",
    "HARDWARE_ID": "HardwareId",
}


def _get(value: Any, *path: str) -> Any:
    for name in path:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value


def _text(value: Any) -> str | None:
    text = value.strip() if isinstance(value, str) else ""
    return text or None


def label(value: Any) -> str | None:
    """A camera-given name made safe to show and to pass on: control and other unprintable
    characters become spaces, runs of spaces one, at most MAX_LABEL characters."""
    if not isinstance(value, str):
        return None
    printable = "".join(c if c.isprintable() else " " for c in value)
    return " ".join(printable.split())[:MAX_LABEL].rstrip() or None


def device_information(information: Any) -> dict[str, str]:
    """GetDeviceInformation: the labels it gave, by property suffix (see DEVICE_INFORMATION)."""
    return {
        suffix: text
        for suffix, element in DEVICE_INFORMATION.items()
        if (text := label(_get(information, element)))
    }


def clock_offset(system_date_and_time: Any, now: datetime) -> timedelta:
    """How far the camera's UTC clock is ahead of `now`; zero when it does not tell."""
    utc = _get(system_date_and_time, "UTCDateTime")
    try:
        camera = datetime(
            _get(utc, "Date", "Year"),
            _get(utc, "Date", "Month"),
            _get(utc, "Date", "Day"),
            _get(utc, "Time", "Hour"),
            _get(utc, "Time", "Minute"),
            _get(utc, "Time", "Second"),
            tzinfo=UTC,
        )
    except (TypeError, ValueError, OverflowError):
        return timedelta()
    return camera - now


def mac_address(interfaces: Any) -> str | None:
    """The hardware address of the first enabled interface (of any, when none says)."""
    candidates = list(interfaces) if isinstance(interfaces, list) else []
    enabled = [i for i in candidates if _get(i, "Enabled") is not False]
    return next(
        (mac for i in enabled or candidates if (mac := _text(_get(i, "Info", "HwAddress")))),
        None,
    )


def service_addresses(services: Any) -> dict[str, str]:
    """GetServices: service namespace -> XAddr."""
    listed = services if isinstance(services, list) else []
    return {
        namespace: address
        for s in listed
        if (namespace := _text(_get(s, "Namespace"))) and (address := _text(_get(s, "XAddr")))
    }


def media_address(capabilities: Any) -> str | None:
    """GetCapabilities: the media service's XAddr."""
    return _text(_get(capabilities, "Media", "XAddr"))


def profile_tokens(profiles: Any) -> list[str]:
    listed = profiles if isinstance(profiles, list) else []
    return [token for p in listed if (token := _text(_get(p, "token")))]


def stream_uri(media_uri: Any) -> str | None:
    """GetStreamUri: Media1 answers a MediaUri (its Uri inside), Media2 the URI itself."""
    return _text(media_uri) or _text(_get(media_uri, "Uri"))
