"""Pure: opcua discoveryDetails, what an OPC UA answer may hold, and the devices it makes.

A FindServers answer comes from whatever listens at a discovery URL, so it is read as hostile:
text loses its control characters, a field or list past its bound refuses that application
(or the rest of the answer) with a problem the handler reports, and a URL it names may point
at the node's own or its link's services only when the answer came from the node itself. A
server is one device per discovery URL, identified by that URL and its application URI, so it
keeps its id whether it is found directly or through a discovery server.
"""

from __future__ import annotations

import ipaddress
import operator
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from akri.discovery.details import MIN_POLL_INTERVAL_S, parse_details
from akri.discovery.model import Device
from akri.discovery_handlers.addresses import Address, is_local
from akri.discovery_handlers.filters import FilterList, admits

NAME = "opcua"
EXAMPLE = "opcuaDiscoveryMethod: {standard: {discoveryUrls: [opc.tcp://localhost:4840/]}}"
SCHEME = "opc.tcp"
DEFAULT_DISCOVERY_URL = "opc.tcp://localhost:4840/"
DISCOVERY_URL = "OPCUA_DISCOVERY_URL"
APPLICATION_NAME = "OPCUA_APPLICATION_NAME"
APPLICATION_URI = "OPCUA_APPLICATION_URI"

MAX_DISCOVERY_URLS = 64
"""Discovery URLs in one Configuration."""
MAX_APPLICATIONS = 256
"""Applications read from one FindServers answer; a discovery server lists its servers."""
MAX_APPLICATION_URLS = 16
"""Discovery URLs read from one application."""
MAX_URL_CHARS = 1024
MAX_URI_CHARS = 1024
MAX_NAME_CHARS = 256


Described = tuple[str, str, int, Sequence[str]]
"""An ApplicationDescription as read off the wire: (URI, name, type, discovery URLs)."""


class ApplicationType(IntEnum):
    """OPC UA Part 4's ApplicationType."""

    SERVER = 0
    CLIENT = 1
    CLIENT_AND_SERVER = 2
    DISCOVERY_SERVER = 3


SERVES = frozenset({ApplicationType.SERVER, ApplicationType.CLIENT_AND_SERVER})


def opc_tcp_url(value: str) -> str:
    """`opc.tcp://host[:port][/path]`: the only transport the handler speaks."""
    if len(value) > MAX_URL_CHARS:
        raise ValueError(f"a discovery URL has at most {MAX_URL_CHARS} characters")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{value!r} is not a URL: {error}") from None
    if parts.scheme != SCHEME or not parts.hostname:
        raise ValueError(f"a discovery URL looks like {DEFAULT_DISCOVERY_URL}, got {value!r}")
    if port == 0:
        raise ValueError(f"{value!r} has port 0")
    return value


class Standard(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    discovery_urls: list[Annotated[str, AfterValidator(opc_tcp_url)]] = Field(
        default_factory=lambda: [DEFAULT_DISCOVERY_URL],
        alias="discoveryUrls",
        min_length=1,
        max_length=MAX_DISCOVERY_URLS,
    )


class DiscoveryMethod(BaseModel):
    """Akri's `opcuaDiscoveryMethod`, whose one method is `standard`."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    standard: Standard


class Details(BaseModel):
    """`discoveryDetails` of an opcua Configuration: Akri's fields, plus how often to ask."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    discovery_method: DiscoveryMethod = Field(
        default_factory=lambda: DiscoveryMethod(standard=Standard()),
        alias="opcuaDiscoveryMethod",
    )
    application_names: FilterList[str] | None = Field(None, alias="applicationNames")
    discovery_interval_seconds: float = Field(
        10, alias="discoveryIntervalSeconds", ge=MIN_POLL_INTERVAL_S
    )
    allow_local_addresses: bool = Field(False, alias="allowLocalAddresses")

    @property
    def discovery_urls(self) -> list[str]:
        return self.discovery_method.standard.discovery_urls


def details_of(details: str) -> Details:
    return parse_details(NAME, details, Details, EXAMPLE)


def clean(text: str) -> str:
    """`text` without control, format or unassigned characters (newlines, escapes, bidi
    overrides), which would corrupt logs and mislead whoever reads a property."""
    return "".join(c for c in text if not unicodedata.category(c).startswith("C"))


@dataclass(frozen=True)
class Application:
    """One ApplicationDescription of an answer, cleaned and within bounds."""

    uri: str
    name: str
    kind: ApplicationType
    discovery_urls: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """What one discovery URL answered: the applications kept, and why others were not."""

    url: str
    applications: tuple[Application, ...] = ()
    problems: tuple[str, ...] = ()


def application_of(uri: str, name: str, kind: int, urls: Sequence[str]) -> Application | str:
    """The application, or why it is refused (a field or list past its bound)."""
    uri, name = clean(uri), clean(name)
    if len(uri) > MAX_URI_CHARS:
        return f"an application URI of {len(uri)} characters (at most {MAX_URI_CHARS})"
    if len(name) > MAX_NAME_CHARS:
        return f"an application name of {len(name)} characters (at most {MAX_NAME_CHARS})"
    if len(urls) > MAX_APPLICATION_URLS:
        return f"{len(urls)} discovery URLs for {uri!r} (at most {MAX_APPLICATION_URLS})"
    cleaned = tuple(clean(url) for url in urls)
    if any(len(url) > MAX_URL_CHARS for url in cleaned):
        return f"a discovery URL of {uri!r} longer than {MAX_URL_CHARS} characters"
    try:
        application_type = ApplicationType(kind)
    except ValueError:
        return f"application {uri!r} of unknown type {kind}"
    return Application(uri, name, application_type, cleaned)


def answer_of(url: str, described: Sequence[Described]) -> Answer:
    """The Answer for FindServers' (uri, name, type, discovery URLs) of each application."""
    problems = []
    if len(described) > MAX_APPLICATIONS:
        problems.append(f"{len(described)} applications (only the first {MAX_APPLICATIONS} read)")
    applications = []
    for fields in described[:MAX_APPLICATIONS]:
        made = application_of(*fields)
        if isinstance(made, str):
            problems.append(made)
        else:
            applications.append(made)
    return Answer(url, tuple(applications), tuple(f"{url} answered {p}" for p in problems))


def preferred_url(application: Application) -> str | None:
    """Its first opc.tcp discovery URL, else its first URL of any kind."""
    urls = [u for u in application.discovery_urls if u]
    return next((u for u in urls if u.startswith(f"{SCHEME}://")), urls[0] if urls else None)


def host_of(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def is_unspecified(host: str) -> bool:
    """0.0.0.0 or ::, which a server bound to every interface may announce."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def with_host(url: str, host: str) -> str:
    """`url` with its host replaced by `host` (an answering address), port and path kept."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port is not None else ""
    shown = f"[{host}]" if ":" in host else host
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = f"{userinfo}@{shown}{port}" if userinfo else f"{shown}{port}"
    return parts._replace(netloc=netloc).geturl()


def follow_refused(
    url: str, named: frozenset[Address], answerer: frozenset[Address], details: Details
) -> str | None:
    """Why `url`, which an answer from `answerer` named at the addresses `named`, may be
    neither asked nor reported; None when it may. A discovery server on the LAN naming a
    loopback or link-local address would have the handler (and brokers) call the node's own
    services or its link's (169.254.169.254 is a cloud's metadata service); the node itself
    (a loopback answer) may name them, and any host may name itself."""
    if details.allow_local_addresses or named <= answerer:
        return None
    if answerer and all(address.is_loopback for address in answerer):
        return None
    local = sorted(str(address) for address in named if is_local(address))
    if local:
        return (
            f"{url} names {local[0]}, a loopback or link-local address, in an answer from "
            "another host (allowLocalAddresses is off)"
        )
    return None


@dataclass(frozen=True)
class Server:
    """A server found, at the discovery URL a broker should use."""

    url: str
    application: Application

    @property
    def id(self) -> str:
        return f"{self.url}-{self.application.uri}"


def passes(server: Server, details: Details) -> bool:
    return admits(details.application_names, [server.application.name], operator.eq)


def properties(server: Server) -> dict[str, str]:
    return {
        DISCOVERY_URL: server.url,
        APPLICATION_NAME: server.application.name,
        APPLICATION_URI: server.application.uri,
    }


def devices(servers: Iterable[Server], details: Details) -> list[Device]:
    """One Device per server passing the filters, de-duplicated and sorted by id."""
    chosen = {s.id: s for s in servers if s.application.kind in SERVES and passes(s, details)}
    return [Device(key, properties(chosen[key])) for key in sorted(chosen)]
