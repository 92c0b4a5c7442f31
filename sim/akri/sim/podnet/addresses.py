"""Addresses of the pod network (pure): each node's pod CIDR, gateway and pod addresses."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Final

BRIDGE: Final = "cni0"
BRIDGE_MAC: Final = "0a:58:0a:f4:00:01"
"""The bridge's own MAC (locally administered), set so that it never changes. A bridge without
one takes the lowest MAC of its ports: a pod's veth joining or leaving changed the gateway's
MAC under every other pod, whose packets then went to the old one until its ARP entry expired,
tens of seconds in which the controller's Lease renewals timed out (issue 27)."""
CLUSTER_CIDR: Final = ipaddress.IPv4Network("10.244.0.0/16")
NODE_PREFIX: Final = 24
MAX_NODES: Final = 2 ** (NODE_PREFIX - CLUSTER_CIDR.prefixlen)


class NoPodAddress(RuntimeError):
    """The node's pod CIDR is used up: a pod's sandbox cannot be made until one ends."""


@dataclass
class NodeNetwork:
    """Node `index`'s share of the cluster CIDR: the `index`-th /24. Its first address is the
    node's own on the bridge (the pods' gateway and the node's InternalIP); pods get the rest."""

    index: int
    _used: set[ipaddress.IPv4Address] = field(default_factory=set)
    _last: int = 1
    """Offset of the address given last: the next search starts after it (as host-local IPAM
    does), so a pod's address is not handed to the next pod at once."""

    def __post_init__(self) -> None:
        if not 0 <= self.index < MAX_NODES:
            raise ValueError(f"the pod network has room for {MAX_NODES} nodes")

    @property
    def cidr(self) -> ipaddress.IPv4Network:
        size = 2 ** (32 - NODE_PREFIX)
        start = int(CLUSTER_CIDR.network_address) + self.index * size
        return ipaddress.IPv4Network((start, NODE_PREFIX))

    @property
    def gateway(self) -> str:
        return str(self.cidr.network_address + 1)

    def allocate(self) -> str:
        """A free pod address, the first after the one given last; NoPodAddress when the
        node's CIDR is used up."""
        count = self.cidr.num_addresses - 3  # all but the network, gateway and broadcast
        for step in range(1, count + 1):
            offset = (self._last - 2 + step) % count + 2  # pods' offsets: 2 .. count + 1
            address = self.cidr.network_address + offset
            if address not in self._used:
                self._used.add(address)
                self._last = offset
                return str(address)
        raise NoPodAddress(f"no free pod address in {self.cidr}")

    def release(self, address: str) -> None:
        self._used.discard(ipaddress.IPv4Address(address))


def veth_name(address: str) -> str:
    """The bridge end of a pod's veth pair, unique per pod address (at most 15 characters)."""
    packed = ipaddress.IPv4Address(address).packed
    return f"veth{packed[2]:02x}{packed[3]:02x}"
