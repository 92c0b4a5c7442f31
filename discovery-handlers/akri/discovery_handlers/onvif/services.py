"""ONVIF device and media services of one camera, called through onvif-zeep-async.

From the library we take what it does well: the ONVIF WSDLs it ships (loaded from the wheel,
never from the network), zeep's SOAP 1.2 encoding and decoding, and its WS-UsernameToken that
signs with the camera's clock (`UsernameDigestTokenDtDiff`). We do not use its `ONVIFCamera`
or `ONVIFService` objects, because for a handler that probes every camera on a link they:
- parse answers with `xml_huge_tree=True` (libxml2's size and depth limits off) and
  `strict=False` (lxml *recovers* malformed XML), through a transport that reads whole bodies:
  a hostile or broken camera could feed us anything;
- open one aiohttp session per service with 90 s timeouts, and `ONVIFCamera()` pops
  `http_proxy`/`https_proxy` from the process environment; its `update_xaddrs()` makes
  GetServices and GetCapabilities calls we cannot bound per request;
- keep a zeep SqliteCache file on disk.
So this module loads the WSDL documents once (off the event loop), and builds zeep clients that
use our settings (no DTD, no entities, no recovery, libxml2 limits on) and our transport (the
handler's session, a timeout per request, answers capped at MAX_ANSWER_BYTES).

What the library costs, against the hand-written client it replaced (bench_onvif_client.py,
one run of 200 inspections of a fake camera on a loaded 2-core machine, load average 6;
docs/performance.md has the latest): import 0.58 s vs 0.44 s, RSS 84 MB vs 51 MB after the
inspections, the first inspection 195 ms (WSDL parsing) vs 5 ms, then 1.3 ms vs 0.5 ms per
SOAP call (p50). Worse in every number, but per probe round (cameras are inspected
concurrently, every 10 s by default) and bounded; we keep it for the ONVIF schema handling
real cameras need, and the handler imports it only when an onvif Configuration starts
discovery, so agents without cameras pay nothing.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import onvif
from lxml import etree
from onvif.client import UsernameDigestTokenDtDiff
from onvif.transport import ASYNC_TRANSPORT
from zeep import Settings
from zeep.client import AsyncClient
from zeep.exceptions import Error as ZeepError
from zeep.proxy import AsyncServiceProxy
from zeep.wsdl import Document

from akri.discovery_handlers.onvif.camera import same_host, with_zone
from akri.discovery_handlers.onvif.credentials import Credentials

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES = 1 << 20
DEVICE = "http://www.onvif.org/ver10/device/wsdl"
MEDIA = "http://www.onvif.org/ver10/media/wsdl"
MEDIA2 = "http://www.onvif.org/ver20/media/wsdl"
_LIBRARY_WSDL = Path(onvif.__file__).parent / "wsdl"


# zeep decodes some malformed answers into these instead of its own errors (found by fuzzing).
_DECODING_ERRORS = (ValueError, TypeError, LookupError, AttributeError)


class CameraError(Exception):
    """A camera's answer was a fault, unusable, too large or too late."""


@dataclass(frozen=True)
class _Service:
    wsdl: Path
    binding: str


_SERVICES = {
    DEVICE: _Service(_LIBRARY_WSDL / "devicemgmt.wsdl", f"{{{DEVICE}}}DeviceBinding"),
    MEDIA: _Service(_LIBRARY_WSDL / "media.wsdl", f"{{{MEDIA}}}MediaBinding"),
    # The wheel has no ver20 media WSDL: ours holds the two operations we call.
    MEDIA2: _Service(Path(__file__).with_name("media2.wsdl"), f"{{{MEDIA2}}}Media2Binding"),
}

# WSDLs are ours to trust; answers are not: only these settings parse what cameras send.
_WSDL_SETTINGS = Settings(strict=False, forbid_dtd=True, forbid_external=True)
_ANSWER_SETTINGS = Settings(
    strict=True, forbid_dtd=True, forbid_entities=True, forbid_external=True, xml_huge_tree=False
)


class _Documents:
    """The parsed WSDLs by service namespace, loaded once per process."""

    lock = threading.Lock()
    loaded: dict[str, Document] | None = None

    @classmethod
    def load(cls) -> dict[str, Document]:
        with cls.lock:
            if cls.loaded is None:
                cls.loaded = {
                    namespace: Document(str(service.wsdl), ASYNC_TRANSPORT, settings=_WSDL_SETTINGS)
                    for namespace, service in _SERVICES.items()
                }
            return cls.loaded


async def documents() -> Mapping[str, Document]:
    """The WSDLs, parsed in a thread the first time (it takes a few hundred ms).

    A pool of our own that ends with the load rather than a thread left idle in the loop's
    default executor; a thread lock rather than an asyncio one, as callers may be on any loop.
    """
    if _Documents.loaded is not None:
        return _Documents.loaded
    with ThreadPoolExecutor(1, thread_name_prefix="onvif-wsdl") as pool:
        return await asyncio.get_running_loop().run_in_executor(pool, _Documents.load)


@dataclass
class Answer:
    """What zeep reads of an HTTP answer (it expects a `requests.Response`)."""

    status_code: int
    content: bytes
    headers: Mapping[str, str]
    encoding: str | None = None


class AnswerTransport(Protocol):
    """What zeep's async client needs of a transport (a test may hand answers itself)."""

    async def post_xml(self, address: str, envelope: Any, headers: Mapping[str, str]) -> Answer:
        """The camera's answer to `envelope`, or an exception."""

    async def aclose(self) -> None:
        """Release what the transport holds."""


class Transport:
    """zeep's async transport over the handler's aiohttp session, bounded in time and size;
    link-local IPv6 hosts (of every URL a camera gives, media services too) are reached through
    the interface `ipv6_zone`."""

    def __init__(
        self, session: aiohttp.ClientSession, timeout: float, ipv6_zone: str | None = None
    ) -> None:
        self._session = session
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._zone = ipv6_zone

    async def post_xml(self, address: str, envelope: Any, headers: Mapping[str, str]) -> Answer:
        async with self._session.post(
            with_zone(address, self._zone),
            data=etree.tostring(envelope),
            headers=headers,
            timeout=self._timeout,
            allow_redirects=False,  # a redirect could send the request to any host
        ) as reply:
            content = bytearray()
            async for chunk in reply.content.iter_any():
                content += chunk
                if len(content) > MAX_ANSWER_BYTES:
                    raise CameraError(f"answer larger than {MAX_ANSWER_BYTES} bytes refused")
            return Answer(reply.status, bytes(content), dict(reply.headers), reply.charset)

    async def aclose(self) -> None:
        """The session is the handler's, closed by it."""


class Camera:
    """The services of the camera at `service_url`, signed with its credentials and its clock
    when known. Only that URL's host is called: a camera's answers (GetServices,
    GetCapabilities) may name service addresses anywhere, which are refused."""

    def __init__(
        self,
        transport: AnswerTransport,
        documents: Mapping[str, Document],
        credentials: Credentials | None,
        service_url: str,
    ) -> None:
        self._transport = transport
        self._documents = documents
        self._credentials = credentials
        self._service_url = service_url
        self.clock_offset = timedelta()

    def _proxy(self, namespace: str, address: str, signed: bool) -> AsyncServiceProxy:
        wsse = None
        if signed and self._credentials is not None:
            wsse = UsernameDigestTokenDtDiff(
                self._credentials.username,
                self._credentials.password,
                dt_diff=self.clock_offset,
                use_digest=True,  # zeep's default sends the password itself
            )
        client = AsyncClient(
            self._documents[namespace],
            wsse=wsse,
            transport=self._transport,
            settings=_ANSWER_SETTINGS,
        )
        return AsyncServiceProxy(
            client, client.wsdl.bindings[_SERVICES[namespace].binding], address=address
        )

    async def call(
        self, namespace: str, address: str, operation: str, signed: bool = True, **arguments: Any
    ) -> Any:
        """The answer of one operation, as zeep reads it; CameraError for anything but one."""
        if not same_host(address, self._service_url):
            raise CameraError(f"{operation}: {address} is not on the camera's host, not called")
        proxy = self._proxy(namespace, address, signed)
        try:
            return await getattr(proxy, operation)(**arguments)
        except ZeepError as error:
            raise CameraError(f"{operation}: {_reason(error)}") from None
        except aiohttp.ClientError as error:
            raise CameraError(f"{operation}: {error}") from None
        except TimeoutError:
            raise CameraError(f"{operation}: no answer in time") from None
        except _DECODING_ERRORS as error:
            raise CameraError(f"{operation}: unreadable answer: {error!r}") from None


def _reason(error: ZeepError) -> str:
    """zeep's message without the answer's content it sometimes appends."""
    return str(getattr(error, "message", None) or error).partition("\nContent:")[0]
