"""The onvif handler's loop: probe, check each camera, list; Hello and Bye between probes.

Each probe round replaces the whole table, so a camera that stops answering (discovery or
SOAP) disappears at the next round. Between rounds a Hello adds or refreshes one camera at
once (resolved first when it leaves its XAddrs out) and a Bye removes it. The list is sent
only when it changed.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable, Mapping

import aiohttp

from akri.discovery.model import Device, HandlerUnavailable
from akri.discovery_handlers.onvif import camera, probe
from akri.discovery_handlers.onvif.credentials import Credentials, credential_table, credentials_for
from akri.discovery_handlers.onvif.wsdiscovery import PORT, Endpoint, Message
from akri.settings import Variable

log = logging.getLogger(__name__)

INTERFACE_ENV = "ONVIF_INTERFACE_ADDRESS"
IPV6_INTERFACE_ENV = "ONVIF_IPV6_INTERFACE"
ENVIRONMENT = (
    Variable(
        INTERFACE_ENV,
        "the system's choice",
        "address of the interface probes leave by (interfaceAddress in the details wins)",
    ),
    Variable(
        IPV6_INTERFACE_ENV,
        "no IPv6 probing",
        "name of the interface whose link is also probed over IPv6, ff02::c "
        "(ipv6Interface in the details wins)",
    ),
)
REQUEST_TIMEOUT_S = 3.0

# (service URL, endpoint uuid, credentials) -> the camera, or None when it does not answer.
Inspect = Callable[[str, str, Credentials | None], Awaitable[camera.Camera | None]]
# Endpoints without XAddrs -> those that told them, by uuid.
Resolve = Callable[[list[Endpoint]], Awaitable[dict[str, Endpoint]]]


class _Cameras:
    """The devices found per endpoint uuid, for one discover call."""

    def __init__(
        self,
        inspect: Inspect,
        resolve: Resolve,
        details: camera.Details,
        credentials: Mapping[str, Credentials],
    ) -> None:
        self.found: dict[str, list[Device]] = {}
        self._inspect = inspect
        self._resolve = resolve
        self._details = details
        self._credentials = credentials

    def _callable(self, endpoint: Endpoint) -> list[str]:
        """The endpoint's service URLs that may be asked anything (see camera.call_refused)."""
        chosen = []
        for url in endpoint.xaddrs:
            if (refused := camera.call_refused(url, endpoint.sender, self._details)) is None:
                chosen.append(url)
            else:
                log.warning("onvif camera %s at %s not called: %s", endpoint.uuid, url, refused)
        return chosen

    async def _devices(self, endpoint: Endpoint) -> list[Device]:
        if not camera.announced_passes(endpoint, self._details):
            return []
        credentials = credentials_for(self._credentials, endpoint.uuid)
        answered = await asyncio.gather(
            *(self._inspect(url, endpoint.uuid, credentials) for url in self._callable(endpoint))
        )
        return [
            camera.device(c)
            for c in answered
            if c is not None and camera.answered_passes(c, self._details)
        ]

    async def replace(self, endpoints: Iterable[Endpoint]) -> None:
        chosen = list(endpoints)
        found = await asyncio.gather(*(self._devices(e) for e in chosen))
        self.found = {e.uuid: d for e, d in zip(chosen, found, strict=True) if d}

    async def apply(self, message: Message) -> None:
        for endpoint in message.endpoints:
            if message.kind == "Bye":
                self.found.pop(endpoint.uuid, None)
            elif endpoint.video_transmitter:
                if not endpoint.xaddrs:
                    resolved = (await self._resolve([endpoint])).get(endpoint.uuid)
                    if resolved is None:
                        continue
                    endpoint = resolved
                self.found[endpoint.uuid] = await self._devices(endpoint)

    def devices(self) -> list[Device]:
        return sorted((d for ds in self.found.values() for d in ds), key=lambda d: d.id)


class Onvif:
    """The onvif handler; cameras on the network are seen from every node (shared)."""

    name = camera.NAME

    def __init__(
        self,
        *,
        shared: bool = True,
        interface_address: str | None = None,
        ipv6_interface: str | None = None,
        port: int = PORT,
        request_timeout: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.shared = shared
        self._interface_address = interface_address
        self._ipv6_interface = ipv6_interface
        self._port = port
        self._request_timeout = request_timeout

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        parsed = camera.details_of(details)
        credentials = credential_table(properties)
        # Only now: onvif-zeep-async costs about a second and 20 MB to import (see
        # bench/bench_onvif_client.py), which agents without onvif Configurations never pay.
        from akri.discovery_handlers.onvif import device, services

        wsdls = await services.documents()
        links = probe.Links(
            parsed.interface_address or self._interface_address,
            parsed.ipv6_interface or self._ipv6_interface,
        )
        announcements = probe.Announcements()
        try:
            families = await announcements.start(probe.families_of(links, self._port))
        except OSError as error:
            announcements.close()
            raise HandlerUnavailable(f"cannot listen for WS-Discovery: {error}") from None
        loop = asyncio.get_running_loop()
        try:
            async with aiohttp.ClientSession() as session:
                transport = services.Transport(session, self._request_timeout, links.ipv6)
                inspect = functools.partial(device.inspect, transport, wsdls)
                resolve = functools.partial(
                    probe.resolve, families, parsed.discovery_timeout_seconds
                )
                cameras = _Cameras(inspect, resolve, parsed, credentials)
                sent: list[Device] | None = None
                while True:
                    try:
                        found = await probe.probe(families, parsed.discovery_timeout_seconds)
                    except OSError as error:
                        raise HandlerUnavailable(
                            f"cannot send WS-Discovery probes: {error}"
                        ) from None
                    await cameras.replace(found.values())
                    next_round = loop.time() + parsed.probe_interval_seconds
                    while True:
                        if (current := cameras.devices()) != sent:
                            yield current
                            sent = current
                        try:
                            async with asyncio.timeout_at(next_round):
                                message = await announcements.queue.get()
                        except TimeoutError:
                            break
                        await cameras.apply(message)
        finally:
            announcements.close()


def from_environment(shared: bool | None, environ: Mapping[str, str]) -> Onvif:
    """`akri-discovery-handler onvif`; ONVIF_INTERFACE_ADDRESS picks the probing interface,
    ONVIF_IPV6_INTERFACE the link also probed over IPv6."""
    return Onvif(
        shared=True if shared is None else shared,
        interface_address=environ.get(INTERFACE_ENV) or None,
        ipv6_interface=environ.get(IPV6_INTERFACE_ENV) or None,
    )
