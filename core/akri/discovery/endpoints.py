"""Pure: check a registered endpoint and turn it into a gRPC target.

A registration is refused up front when its endpoint could never be dialled, so the handler's
author sees INVALID_ARGUMENT instead of a Configuration that silently discovers nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from akri.proto.discovery.v0.discovery_pb2 import RegisterDiscoveryHandlerRequest
from akri.unix_sockets import MAX_SOCKET_PATH_BYTES

UDS = RegisterDiscoveryHandlerRequest.UDS
NETWORK = RegisterDiscoveryHandlerRequest.NETWORK


@dataclass(frozen=True)
class Endpoint:
    """Where a handler serves `DiscoveryHandler.Discover`."""

    address: str
    """As registered: a unix socket path or `http://<ip>:<port>`."""
    target: str
    """The same address as gRPC dials it."""


def parse_endpoint(address: str, endpoint_type: int) -> Endpoint:
    """The endpoint of a registration; ValueError says what is wrong with it."""
    if endpoint_type == UDS:
        return Endpoint(address, _socket_target(address))
    if endpoint_type == NETWORK:
        return Endpoint(address, _network_target(address))
    raise ValueError(f"unknown endpoint type {endpoint_type}")


def _socket_target(path: str) -> str:
    if not path.startswith("/"):
        raise ValueError(f"unix socket endpoint {path!r} is not an absolute path")
    if len(path.encode()) > MAX_SOCKET_PATH_BYTES:
        raise ValueError(f"unix socket path {path!r} is longer than {MAX_SOCKET_PATH_BYTES} bytes")
    return f"unix://{path}"


def _network_target(url: str) -> str:
    expected = "network endpoint must look like http://<ip>:<port>"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{expected}, got {url!r}: {error}") from None
    if (
        parts.scheme != "http"
        or not parts.hostname
        or port is None
        or parts.username is not None
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(f"{expected}, got {url!r}")
    return parts.netloc
