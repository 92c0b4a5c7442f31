"""The one protocol every discovery handler implements, embedded in the agent or external."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Protocol

from akri.discovery.model import Device


class DiscoveryHandler(Protocol):
    """Finds devices of one kind; the agent does not care where it runs."""

    @property
    def name(self) -> str:
        """Matched against a Configuration's `spec.discoveryHandler.name`."""
        ...

    @property
    def shared(self) -> bool:
        """Whether one device can be seen from several nodes (one Instance cluster-wide)."""
        ...

    def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        """Yield the complete current device list whenever it changes.

        A generator rather than any iterator, so callers can close it at once and release
        what it holds (a gRPC channel, a watch).

        Raises `InvalidDetails` before the first list when `details` is unusable, and
        `HandlerUnavailable` when the handler stops working; an ending stream means the same.
        """
        ...
