"""Every discovery handler the agent can use, by name and endpoint, with change notification.

A Configuration whose handler is not registered yet waits on `changed()` instead of polling,
and starts discovering the moment a handler registers (Akri instead fails and backs off).
"""

from __future__ import annotations

import asyncio
import logging

from akri.discovery.handler import DiscoveryHandler

log = logging.getLogger(__name__)

EMBEDDED = "embedded"
"""The endpoint of handlers running inside the agent."""


class HandlerRegistry:
    """Handlers keyed by (name, endpoint); one name may have many endpoints."""

    def __init__(self) -> None:
        self._handlers: dict[str, dict[str, DiscoveryHandler]] = {}
        self._changed = asyncio.Event()

    def add(self, handler: DiscoveryHandler, endpoint: str = EMBEDDED) -> None:
        """Add, or replace the handler at the same name and endpoint (a re-registration)."""
        self._handlers.setdefault(handler.name, {})[endpoint] = handler
        log.info("discovery handler %s registered at %s", handler.name, endpoint)
        self._notify()

    def remove(self, name: str, endpoint: str, handler: DiscoveryHandler) -> bool:
        """Remove `handler` unless it was replaced meanwhile; True when it was removed."""
        endpoints = self._handlers.get(name, {})
        if endpoints.get(endpoint) is not handler:
            return False
        del endpoints[endpoint]
        if not endpoints:
            del self._handlers[name]
        log.info("discovery handler %s at %s removed", name, endpoint)
        self._notify()
        return True

    def handlers(self, name: str) -> dict[str, DiscoveryHandler]:
        """A snapshot: endpoint -> handler for `name`."""
        return dict(self._handlers.get(name, {}))

    def names(self) -> set[str]:
        return set(self._handlers)

    def changed(self) -> asyncio.Event:
        """An event set at the next change; take it before reading, then wait on it."""
        return self._changed

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()
