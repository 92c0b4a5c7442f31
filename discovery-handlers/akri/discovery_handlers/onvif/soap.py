"""Pure: the few ONVIF SOAP 1.2 requests the handler makes, and reading their answers.

Requests are fixed envelopes; with credentials they carry a WS-UsernameToken with a
PasswordDigest (base64 SHA-1 of nonce + created + password), so the password never travels.
"""

from __future__ import annotations

import base64
import hashlib
import xml.etree.ElementTree as ET
from datetime import datetime
from xml.sax.saxutils import escape

from akri.discovery_handlers.onvif.credentials import Credentials
from akri.discovery_handlers.onvif.safexml import UnsafeXml, descendants, first, parse_xml, text_of
from akri.discovery_handlers.onvif.wsdiscovery import SOAP_ENV

DEVICE_WSDL = "http://www.onvif.org/ver10/device/wsdl"
MEDIA_WSDL = "http://www.onvif.org/ver10/media/wsdl"
SCHEMA = "http://www.onvif.org/ver10/schema"
WSSE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
WSU = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
TOKEN_PROFILE = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0"
BASE64_ENCODING = (
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"
)
CONTENT_TYPE = "application/soap+xml; charset=utf-8"

GET_SYSTEM_DATE_AND_TIME = f'<GetSystemDateAndTime xmlns="{DEVICE_WSDL}"/>'
GET_NETWORK_INTERFACES = f'<GetNetworkInterfaces xmlns="{DEVICE_WSDL}"/>'
GET_MEDIA_CAPABILITIES = (
    f'<GetCapabilities xmlns="{DEVICE_WSDL}"><Category>Media</Category></GetCapabilities>'
)
GET_PROFILES = f'<GetProfiles xmlns="{MEDIA_WSDL}"/>'


class SoapError(Exception):
    """An answer that is a fault, not XML, or not the expected response."""


def get_stream_uri(profile_token: str) -> str:
    """The RTSP (RTP over RTSP, unicast) URI of one media profile."""
    return (
        f'<GetStreamUri xmlns="{MEDIA_WSDL}" xmlns:tt="{SCHEMA}"><StreamSetup>'
        "<tt:Stream>RTP-Unicast</tt:Stream><tt:Transport><tt:Protocol>RTSP</tt:Protocol>"
        f"</tt:Transport></StreamSetup><ProfileToken>{escape(profile_token)}</ProfileToken>"
        "</GetStreamUri>"
    )


def password_digest(nonce: bytes, created: str, password: str) -> str:
    return base64.b64encode(
        hashlib.sha1(nonce + created.encode() + password.encode()).digest()
    ).decode()


def security_header(credentials: Credentials, nonce: bytes, now: datetime) -> str:
    created = now.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    digest = password_digest(nonce, created, credentials.password)
    return (
        f'<wsse:Security xmlns:wsse="{WSSE}" xmlns:wsu="{WSU}" s:mustUnderstand="1">'
        f"<wsse:UsernameToken><wsse:Username>{escape(credentials.username)}</wsse:Username>"
        f'<wsse:Password Type="{TOKEN_PROFILE}#PasswordDigest">{digest}</wsse:Password>'
        f'<wsse:Nonce EncodingType="{BASE64_ENCODING}">'
        f"{base64.b64encode(nonce).decode()}</wsse:Nonce>"
        f"<wsu:Created>{created}</wsu:Created></wsse:UsernameToken></wsse:Security>"
    )


def envelope(body: str, security: str = "") -> bytes:
    """`security`: a `security_header(...)`, or empty for unauthenticated calls."""
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="{SOAP_ENV}">'
        f"<s:Header>{security}</s:Header><s:Body>{body}</s:Body></s:Envelope>"
    ).encode()


def response(data: bytes, name: str) -> ET.Element:
    """The `name` element of an answer; SoapError for faults and anything unexpected."""
    try:
        root = parse_xml(data)
    except UnsafeXml as error:
        raise SoapError(str(error)) from None
    if first(root, "Fault") is not None:
        reason = text_of(root, "Text") or text_of(root, "Value") or "no reason given"
        raise SoapError(f"SOAP fault: {reason}")
    found = first(root, name)
    if found is None:
        raise SoapError(f"answer without {name}")
    return found


def mac_address(interfaces: ET.Element) -> str | None:
    """The hardware address of the first enabled interface (of any, when none says)."""
    candidates = list(descendants(interfaces, "NetworkInterfaces"))
    enabled = [i for i in candidates if (text_of(i, "Enabled") or "true").lower() == "true"]
    return next((mac for i in enabled or candidates if (mac := text_of(i, "HwAddress"))), None)


def media_xaddr(capabilities: ET.Element) -> str | None:
    media = first(capabilities, "Media")
    return text_of(media, "XAddr") if media is not None else None


def profile_tokens(profiles: ET.Element) -> list[str]:
    return [token for p in descendants(profiles, "Profiles") if (token := p.get("token"))]


def stream_uri(answer: ET.Element) -> str | None:
    return text_of(answer, "Uri")
