"""The mdns handler's I/O: a zeroconf browser whose add/update/remove events drive the list.

Each added or updated service is resolved (SRV, TXT, addresses) in its own task; a removal
cancels a resolution still running. Everything runs on the event loop, so the service table
needs no lock, and the list is recomputed and sent only when an event changed it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping, Sequence

import zeroconf
from zeroconf import InterfaceChoice, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from akri.discovery.model import Device, HandlerUnavailable
from akri.discovery_handlers.mdns.service import NAME, Service, details_of, devices
from akri.settings import Variable

log = logging.getLogger(__name__)

RESOLVE_TIMEOUT_MS = 3000
INTERFACES_ENV = "MDNS_INTERFACES"
ENVIRONMENT = (
    Variable(INTERFACES_ENV, "all interfaces", "comma-separated addresses to browse on"),
)


def service_of(info: AsyncServiceInfo) -> Service:
    return Service(
        name=info.name,
        service_type=info.type,
        host=info.server or "",
        addresses=tuple(info.parsed_scoped_addresses()),
        port=info.port or 0,
        txt={
            key.decode(errors="replace"): value.decode(errors="replace") if value else None
            for key, value in info.properties.items()
        },
    )


class _Browse:
    """The services of one discover call, kept current from the browser's events."""

    def __init__(self, zeroconf: Zeroconf) -> None:
        self.services: dict[str, Service] = {}
        self.changed = asyncio.Event()
        self._zeroconf = zeroconf
        self._resolving: dict[str, asyncio.Task[None]] = {}

    def on_change(
        self,
        zeroconf: Zeroconf,
        service_type: str,
        name: str,
        state_change: ServiceStateChange,
    ) -> None:
        """Called by the browser on the event loop."""
        self._cancel(name)
        if state_change is ServiceStateChange.Removed:
            if self.services.pop(name, None) is not None:
                self.changed.set()
            return
        self._resolving[name] = asyncio.create_task(
            self._resolve(service_type, name), name=f"mdns resolve {name}"
        )

    async def _resolve(self, service_type: str, name: str) -> None:
        """Cancelled (by a newer event for `name`) only while waiting for the answer."""
        try:
            info = AsyncServiceInfo(service_type, name)
            resolved = await info.async_request(self._zeroconf, RESOLVE_TIMEOUT_MS)
        except zeroconf.Error as error:  # a malformed announcement must not stop discovery
            log.warning("mdns service %r ignored: %s", name, error)
            resolved = False
        del self._resolving[name]
        if resolved:
            self.services[name] = service_of(info)
            self.changed.set()
        else:
            log.warning("mdns service %s announced but not resolved; ignoring it", name)

    def _cancel(self, name: str) -> None:
        task = self._resolving.pop(name, None)
        if task is not None:
            task.cancel()

    async def close(self) -> None:
        tasks = list(self._resolving.values())
        for name in list(self._resolving):
            self._cancel(name)
        await asyncio.gather(*tasks, return_exceptions=True)


class Mdns:
    """The mdns handler; services are seen from every node on the link (shared)."""

    name = NAME

    def __init__(self, *, shared: bool = True, interfaces: Sequence[str] | None = None) -> None:
        self.shared = shared
        self._interfaces: list[str] | InterfaceChoice = (
            list(interfaces) if interfaces else InterfaceChoice.All
        )

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        parsed = details_of(details)
        try:
            client = AsyncZeroconf(interfaces=self._interfaces)
        except OSError as error:
            raise HandlerUnavailable(f"cannot listen to mDNS: {error}") from None
        browse = _Browse(client.zeroconf)
        browser = AsyncServiceBrowser(
            client.zeroconf, parsed.service_types, handlers=[browse.on_change]
        )
        try:
            sent = devices(browse.services.values(), parsed)
            yield sent
            while True:
                await browse.changed.wait()
                browse.changed.clear()
                current = devices(browse.services.values(), parsed)
                if current != sent:
                    yield current
                    sent = current
        finally:
            await browser.async_cancel()
            await browse.close()
            await client.async_close()


def from_environment(shared: bool | None, environ: Mapping[str, str]) -> Mdns:
    """`akri-discovery-handler mdns`; MDNS_INTERFACES lists addresses to use (default: all)."""
    interfaces = [i.strip() for i in environ.get(INTERFACES_ENV, "").split(",") if i.strip()]
    return Mdns(shared=True if shared is None else shared, interfaces=interfaces)
