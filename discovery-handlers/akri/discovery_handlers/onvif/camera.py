"""Pure: onvif discoveryDetails, which service URLs may be called, which cameras pass the
filters, and their device properties.

A camera reachable at several service URLs is one device per URL, identified as Akri does by
`<serviceUrl>-<uuid>`. Anyone on the link can send WS-Discovery, so before anything is sent to
a service URL its host must be an IP address, the sender of the datagram that named it (or
listed in an Include `ipAddresses` filter), not loopback or link-local (unless allowed), and
pass the scope, uuid and IP address filters. Only the MAC address filter, which the camera
alone can tell (with credentials), applies after it answered. A filter on a value that could
not be learnt refuses the camera.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from akri.discovery.details import MIN_POLL_INTERVAL_S, parse_details
from akri.discovery.model import Device
from akri.discovery_handlers.addresses import Address, is_local, unzoned
from akri.discovery_handlers.filters import FilterList, admits, same_text
from akri.discovery_handlers.onvif.wsdiscovery import Endpoint
from akri.naming import env_suffix

NAME = "onvif"
EXAMPLE = "scopes: {action: Include, items: [onvif://www.onvif.org/name/Lobby]}"
PREFIX = "ONVIF_DEVICE_"


def _ipv4(value: str) -> str:
    ipaddress.IPv4Address(value)  # raises ValueError, which pydantic reports
    return value


_INTERFACE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,15}")


def _interface_name(value: str) -> str:
    """A network interface name as Linux allows them (at most 15 characters), in the characters
    that can stand as a URL's zone unescaped."""
    if not _INTERFACE_NAME.fullmatch(value):
        raise ValueError(f"{value!r} is not a network interface name (like eth0)")
    return value


class Details(BaseModel):
    """`discoveryDetails` of an onvif Configuration (Akri's fields, plus how to probe)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    ip_addresses: FilterList[str] | None = Field(None, alias="ipAddresses")
    mac_addresses: FilterList[str] | None = Field(None, alias="macAddresses")
    scopes: FilterList[str] | None = None
    uuids: FilterList[str] | None = None
    discovery_timeout_seconds: float = Field(1, alias="discoveryTimeoutSeconds", gt=0)
    probe_interval_seconds: float = Field(10, alias="probeIntervalSeconds", ge=MIN_POLL_INTERVAL_S)
    interface_address: Annotated[str, AfterValidator(_ipv4)] | None = Field(
        None, alias="interfaceAddress"
    )
    ipv6_interface: Annotated[str, AfterValidator(_interface_name)] | None = Field(
        None, alias="ipv6Interface"
    )
    allow_local_addresses: bool = Field(False, alias="allowLocalAddresses")


def details_of(details: str) -> Details:
    return parse_details(NAME, details, Details, EXAMPLE)


def announced_passes(endpoint: Endpoint, details: Details) -> bool:
    """The filters decided before asking the camera anything."""
    return admits(details.scopes, endpoint.scopes, same_text) and admits(
        details.uuids, [endpoint.uuid], same_text
    )


def _listed(addresses: FilterList[str] | None, host: str) -> bool:
    """`host` is an item of an Include filter: the operator named it."""
    return (
        addresses is not None
        and addresses.action == "Include"
        and any(same_text(item, host) for item in addresses.items)
    )


def _local(address: Address, details: Details) -> bool:
    """A local address (`is_local`); IPv6 link-local is the camera's own address on the link
    `ipv6Interface` names, so allowed there."""
    if address.is_link_local and address.version == 6 and details.ipv6_interface is not None:
        return False
    return is_local(address)


def call_refused(service_url: str, sender: str | None, details: Details) -> str | None:
    """Why nothing may be sent to `service_url`, which a datagram from `sender` named; None
    when the camera may be asked. Decided before any call, credentials or not."""
    host = host_address(service_url)
    address = None if host is None else unzoned(host)
    if host is None or address is None:
        return "its host is not an IP address"
    if _local(address, details) and not details.allow_local_addresses:
        return f"{address} is a loopback or link-local address (allowLocalAddresses is off)"
    if address != unzoned(sender or "") and not _listed(details.ip_addresses, host):
        return (
            f"it was announced by {sender or 'no known sender'}, not by {host} itself "
            "(list it in an Include ipAddresses filter to allow that)"
        )
    if not admits(details.ip_addresses, [host], same_text):
        return "the ipAddresses filter refuses it"
    return None


def _host(url: str) -> str | None:
    """The URL's host, an IP address without its zone in its usual form, or a lowercase name."""
    try:
        host = unquote(urlsplit(url).hostname or "")
    except ValueError:
        return None
    address = unzoned(host)
    return str(address) if address is not None else host.lower() or None


def same_host(url: str, service_url: str) -> bool:
    """`url` names the host of `service_url`: where a camera's other services may be called."""
    host = _host(url)
    return host is not None and host == _host(service_url)


def without_userinfo(uri: str) -> str | None:
    """`uri` without any `user:password@` (None when it cannot be read as a URL): a camera
    may put its credentials in stream URIs, and Instance properties are readable by anyone
    who may read Instances, and become brokers' environment."""
    try:
        parts = urlsplit(uri)
    except ValueError:
        return None
    if "@" not in parts.netloc:
        return uri
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def host_address(service_url: str) -> str | None:
    """The service URL's host when it is an IP address (a name would need resolving).

    A link-local IPv6 host keeps its zone (`fe80::1%eth0`, written `%25eth0` in URLs).
    """
    try:
        host = unquote(urlsplit(service_url).hostname or "")
        return str(ipaddress.ip_address(host)) if host else None
    except ValueError:
        return None


def with_zone(url: str, zone: str | None) -> str:
    """`url` with its link-local IPv6 host given `zone` (an interface name), when it has none.

    Cameras announce `http://[fe80::1]/...`: the zone is the receiver's interface, which they
    cannot know, and without it no connection can be made. Zones are written plainly
    (`[fe80::1%eth0]`): aiohttp connects to that, not to RFC 6874's `%25` form (given in a URL,
    it is rewritten so). Any other URL is returned as it is.
    """
    try:
        parts = urlsplit(url)
        address, _, given = unquote(parts.hostname or "").partition("%")
        if not ipaddress.IPv6Address(address).is_link_local:
            return url
    except ValueError:  # not a URL, or its host is no IPv6 address
        return url
    if not (zone := given or zone):
        return url
    opened, closed = parts.netloc.index("["), parts.netloc.index("]")
    netloc = f"{parts.netloc[:opened]}[{address}%{zone}]{parts.netloc[closed + 1 :]}"
    return urlunsplit(parts._replace(netloc=netloc))


@dataclass(frozen=True)
class Camera:
    """One service URL of a camera that answered, with what could be learnt about it."""

    service_url: str
    uuid: str
    mac_address: str | None = None
    stream_uris: Mapping[str, str] = field(default_factory=dict)  # profile token -> URI
    # GetDeviceInformation's labels by property suffix (MANUFACTURER, MODEL, ...).
    information: Mapping[str, str] = field(default_factory=dict)

    @property
    def ip_address(self) -> str | None:
        return host_address(self.service_url)


def answered_passes(camera: Camera, details: Details) -> bool:
    """The MAC address filter, the only one that needs the camera's answer."""
    mac = camera.mac_address
    return admits(details.mac_addresses, None if mac is None else [mac], same_text)


def properties(camera: Camera) -> dict[str, str]:
    """Akri's properties, plus what GetDeviceInformation told (`ONVIF_DEVICE_MANUFACTURER`,
    `_MODEL`, `_FIRMWARE_VERSION`, `_SERIAL_NUMBER`, `_HARDWARE_ID`) and
    `ONVIF_DEVICE_STREAM_URI_<PROFILE TOKEN>` per media profile."""
    result = {f"{PREFIX}SERVICE_URL": camera.service_url, f"{PREFIX}UUID": camera.uuid}
    if camera.ip_address is not None:
        result[f"{PREFIX}IP_ADDRESS"] = camera.ip_address
    if camera.mac_address is not None:
        result[f"{PREFIX}MAC_ADDRESS"] = camera.mac_address
    for suffix in sorted(camera.information):
        result[f"{PREFIX}{suffix}"] = camera.information[suffix]
    for token in sorted(camera.stream_uris):
        if (uri := without_userinfo(camera.stream_uris[token])) is not None:
            result.setdefault(f"{PREFIX}STREAM_URI_{env_suffix(token)}", uri)
    return result


def device(camera: Camera) -> Device:
    return Device(f"{camera.service_url}-{camera.uuid}", properties(camera))
