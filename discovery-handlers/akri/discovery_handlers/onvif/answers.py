"""Pure: what the handler reads from the ONVIF answers zeep decoded.

Answers are read by attribute, tolerating anything a camera left out (zeep gives None for a
missing optional element): a value that cannot be read is simply unknown.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any


def _get(value: Any, *path: str) -> Any:
    for name in path:
        value = getattr(value, name, None)
        if value is None:
            return None
    return value


def _text(value: Any) -> str | None:
    text = value.strip() if isinstance(value, str) else ""
    return text or None


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
