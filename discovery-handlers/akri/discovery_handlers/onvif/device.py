"""Does a camera answer, and (with credentials) what it is, its MAC address and stream URIs.

GetSystemDateAndTime comes first, unsigned as ONVIF allows: it tells that the camera answers,
and its clock, with which every later WS-UsernameToken is signed (a camera whose clock is a few
minutes off refuses tokens created by ours). Every request has a timeout, so a silent camera
costs at most that and is simply not listed; failures of the signed calls only leave those
properties out, with a warning (GetDeviceInformation apart from the others, so a camera that
refuses it still gives its streams).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from zeep.wsdl import Document

from akri.discovery_handlers.onvif import answers
from akri.discovery_handlers.onvif.camera import Camera
from akri.discovery_handlers.onvif.credentials import Credentials
from akri.discovery_handlers.onvif.services import (
    DEVICE,
    MEDIA,
    MEDIA2,
    AnswerTransport,
    CameraError,
)
from akri.discovery_handlers.onvif.services import Camera as Services

log = logging.getLogger(__name__)

RTSP_UNICAST = {"Stream": "RTP-Unicast", "Transport": {"Protocol": "RTSP"}}


async def _media_service(services: Services, service_url: str) -> tuple[str, str]:
    """(namespace, address) of the media service to ask: Media2 when offered, else Media1.

    GetServices lists what a camera offers; cameras older than it answer GetCapabilities.
    """
    try:
        answer = await services.call(DEVICE, service_url, "GetServices", IncludeCapability=False)
        offered = answers.service_addresses(answer)
    except CameraError as error:
        log.debug(
            "onvif camera at %s: no GetServices (%s), asking GetCapabilities", service_url, error
        )
        offered = {}
    for namespace in (MEDIA2, MEDIA):
        if namespace in offered:
            return namespace, offered[namespace]
    capabilities = await services.call(DEVICE, service_url, "GetCapabilities", Category="Media")
    return MEDIA, answers.media_address(capabilities) or service_url


async def _streams(services: Services, service_url: str) -> dict[str, str]:
    """RTSP stream URIs by profile token."""
    namespace, media_url = await _media_service(services, service_url)
    profiles = await services.call(namespace, media_url, "GetProfiles")
    streams: dict[str, str] = {}
    for token in answers.profile_tokens(profiles):
        if namespace == MEDIA2:
            answer = await services.call(
                namespace, media_url, "GetStreamUri", Protocol="RTSP", ProfileToken=token
            )
        else:
            answer = await services.call(
                namespace, media_url, "GetStreamUri", StreamSetup=RTSP_UNICAST, ProfileToken=token
            )
        if (uri := answers.stream_uri(answer)) is not None:
            streams[token] = uri
    return streams


async def _information(services: Services, service_url: str, device_uuid: str) -> dict[str, str]:
    """Manufacturer, model, firmware, serial number and hardware id, as far as told."""
    try:
        answer = await services.call(DEVICE, service_url, "GetDeviceInformation")
    except CameraError as error:
        log.warning(
            "onvif camera %s at %s: no device information: %s", device_uuid, service_url, error
        )
        return {}
    return answers.device_information(answer)


async def inspect(
    transport: AnswerTransport,
    documents: Mapping[str, Document],
    service_url: str,
    device_uuid: str,
    credentials: Credentials | None,
) -> Camera | None:
    """The camera at `service_url`, or None when it does not answer GetSystemDateAndTime."""
    services = Services(transport, documents, credentials, service_url)
    try:
        clock = await services.call(DEVICE, service_url, "GetSystemDateAndTime", signed=False)
    except CameraError as error:
        log.warning("onvif camera %s at %s does not answer: %s", device_uuid, service_url, error)
        return None
    if credentials is None:
        return Camera(service_url, device_uuid)
    services.clock_offset = answers.clock_offset(clock, datetime.now(UTC))
    information = await _information(services, service_url, device_uuid)
    try:
        interfaces = await services.call(DEVICE, service_url, "GetNetworkInterfaces")
        streams = await _streams(services, service_url)
    except CameraError as error:
        log.warning(
            "onvif camera %s at %s: no MAC address or streams: %s", device_uuid, service_url, error
        )
        return Camera(service_url, device_uuid, information=information)
    return Camera(service_url, device_uuid, answers.mac_address(interfaces), streams, information)
