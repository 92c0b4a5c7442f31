"""Pure: which addresses a device on the LAN may steer a handler to."""

from __future__ import annotations

import ipaddress

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_local(address: Address) -> bool:
    """Loopback, link-local, unspecified or multicast: the node itself, its link's services
    (169.254.169.254 is a cloud's metadata service) or no single host. A device naming such
    an address for another host would have the handler call the node's own services."""
    return (
        address.is_loopback
        or address.is_link_local
        or address.is_unspecified
        or address.is_multicast
    )


def unzoned(host: str) -> Address | None:
    """`host` as an IP address, any `%zone` of an IPv6 one left off; None when it is a name."""
    try:
        return ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return None
