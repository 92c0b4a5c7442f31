"""ONVIF SOAP over HTTP: does a camera answer, and (with credentials) its MAC and streams.

Every request has a timeout, so a silent camera costs at most that and is simply not listed.
Failures of the authenticated calls only leave those properties out, with a warning.
"""

from __future__ import annotations

import logging
import os
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

import aiohttp

from akri.discovery_handlers.onvif import soap
from akri.discovery_handlers.onvif.camera import Camera
from akri.discovery_handlers.onvif.credentials import Credentials

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 1 << 20
NONCE_BYTES = 16


class _Client:
    """SOAP calls to one camera, signed with its credentials when there are any."""

    def __init__(
        self, session: aiohttp.ClientSession, credentials: Credentials | None, timeout: float
    ) -> None:
        self._session = session
        self._credentials = credentials
        self._timeout = aiohttp.ClientTimeout(total=timeout)

    async def call(self, url: str, body: str, answer: str) -> ET.Element:
        """The `answer` element; SoapError, aiohttp.ClientError or TimeoutError otherwise."""
        security = (
            soap.security_header(self._credentials, os.urandom(NONCE_BYTES), datetime.now(UTC))
            if self._credentials is not None
            else ""
        )
        async with self._session.post(
            url,
            data=soap.envelope(body, security),
            headers={"Content-Type": soap.CONTENT_TYPE},
            timeout=self._timeout,
        ) as reply:
            data = await reply.content.read(MAX_ANSWER_BYTES)
        return soap.response(data, answer)


async def _details(client: _Client, service_url: str) -> tuple[str | None, dict[str, str]]:
    """MAC address and stream URIs by profile token; raises like `_Client.call`."""
    interfaces = await client.call(
        service_url, soap.GET_NETWORK_INTERFACES, "GetNetworkInterfacesResponse"
    )
    capabilities = await client.call(
        service_url, soap.GET_MEDIA_CAPABILITIES, "GetCapabilitiesResponse"
    )
    media_url = soap.media_xaddr(capabilities) or service_url
    profiles = await client.call(media_url, soap.GET_PROFILES, "GetProfilesResponse")
    streams: dict[str, str] = {}
    for token in soap.profile_tokens(profiles):
        answer = await client.call(media_url, soap.get_stream_uri(token), "GetStreamUriResponse")
        if (uri := soap.stream_uri(answer)) is not None:
            streams[token] = uri
    return soap.mac_address(interfaces), streams


async def inspect(
    session: aiohttp.ClientSession,
    service_url: str,
    device_uuid: str,
    credentials: Credentials | None,
    request_timeout: float,
) -> Camera | None:
    """The camera at `service_url`, or None when it does not answer GetSystemDateAndTime."""
    errors = (soap.SoapError, aiohttp.ClientError, TimeoutError, ValueError)
    try:
        await _Client(session, None, request_timeout).call(
            service_url, soap.GET_SYSTEM_DATE_AND_TIME, "GetSystemDateAndTimeResponse"
        )
    except errors as error:
        log.warning("onvif camera %s at %s does not answer: %s", device_uuid, service_url, error)
        return None
    if credentials is None:
        return Camera(service_url, device_uuid)
    try:
        mac, streams = await _details(_Client(session, credentials, request_timeout), service_url)
    except errors as error:
        log.warning(
            "onvif camera %s at %s: no MAC address or streams: %s", device_uuid, service_url, error
        )
        return Camera(service_url, device_uuid)
    return Camera(service_url, device_uuid, mac, streams)
