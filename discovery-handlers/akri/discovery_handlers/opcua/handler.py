"""The opcua handler's loop: a round of FindServers every `discoveryIntervalSeconds`.

A round asks every discovery URL at once, each after a short TCP check so a dead address costs
one connect timeout, not a request timeout. A discovery server (LDS) in an answer is asked in
turn, so servers registered there are found, a bounded number of hops deep. A server's URL
whose host does not resolve (a name only its own network knows) or is unspecified (0.0.0.0)
gets the address that answered instead; one naming a loopback or link-local address of another
host than the one that answered is neither asked nor reported (`servers.follow_refused`).
OPC UA has no announcements a client can follow without multicast, so a server that stops
answering leaves at the next round.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from akri.discovery.model import Device, HandlerUnavailable
from akri.discovery_handlers.addresses import Address, unzoned
from akri.discovery_handlers.opcua.servers import (
    NAME,
    Answer,
    ApplicationType,
    Described,
    Details,
    Server,
    answer_of,
    details_of,
    devices,
    follow_refused,
    host_of,
    is_unspecified,
    preferred_url,
    with_host,
)

log = logging.getLogger(__name__)

CHECK_TIMEOUT_S = 3.0
"""The TCP reachability check before each FindServers (Akri's is 3 s too)."""
REQUEST_TIMEOUT_S = 5.0
"""Connecting, opening the channel and FindServers together."""
RESOLVE_TIMEOUT_S = 3.0
"""For every host name of a round's answers together."""
MAX_HOPS = 2
"""Discovery servers followed from a configured URL: an LDS, and one it names."""
MAX_QUERIES = 128
"""Discovery URLs asked in one round, configured and followed together."""
MAX_PROBLEM_CHARS = 2048
"""Of the condition message a refused answer makes."""

FindServers = Callable[[str, float], Awaitable[Sequence[Described]]]


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "", parts.port or 4840


@dataclass
class Round:
    """What one round found, and the answers it could not use."""

    servers: list[Server] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


class Finder:
    """Rounds of FindServers; `find_servers` is asyncua's (or a test's) call."""

    def __init__(
        self,
        find_servers: FindServers,
        *,
        check_timeout: float = CHECK_TIMEOUT_S,
        request_timeout: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self._find_servers = find_servers
        self._check_timeout = check_timeout
        self._request_timeout = request_timeout

    async def round(self, details: Details) -> Round:
        found = Round()
        asked: set[str] = set()
        pending = list(dict.fromkeys(details.discovery_urls))
        for _ in range(MAX_HOPS + 1):
            pending = [url for url in pending if url not in asked][: MAX_QUERIES - len(asked)]
            if not pending:
                break
            asked.update(pending)
            answers = await asyncio.gather(*(self._ask(url) for url in pending))
            offered = [
                (answer.url, application, url)
                for answer in answers
                for application in answer.applications
                if (url := preferred_url(application)) is not None and host_of(url)
            ]
            hosts = {host_of(url) or "" for _, _, url in offered}
            hosts |= {_host_port(answered)[0] for answered, _, _ in offered}
            addresses = await self._addresses(hosts)
            pending = []
            for answered, application, url in offered:
                answering_host = _host_port(answered)[0]
                answerer = addresses.get(answering_host, frozenset())
                named = addresses.get(host_of(url) or "")
                if not named:  # a name only its network knows, or 0.0.0.0: the answering host
                    url, named = with_host(url, answering_host), answerer
                if refused := follow_refused(url, named, answerer, details):
                    found.problems.append(f"{answered} answered {refused}")
                    continue
                if application.kind is ApplicationType.DISCOVERY_SERVER:
                    pending.append(url)
                else:
                    found.servers.append(Server(url, application))
            found.problems.extend(p for answer in answers for p in answer.problems)
        return found

    async def _ask(self, url: str) -> Answer:
        host, port = _host_port(url)
        if not await self._reachable(host, port):
            log.debug("opcua discovery URL %s is not reachable", url)
            return Answer(url)
        try:
            async with asyncio.timeout(self._request_timeout):
                described = await self._find_servers(url, self._request_timeout)
        except (OSError, TimeoutError) as error:
            log.info("opcua FindServers at %s failed: %r", url, error)
            return Answer(url)
        except Exception as error:  # whatever a hostile answer makes the decoder raise
            log.warning("opcua FindServers at %s gave no usable answer: %r", url, error)
            return Answer(url, problems=(f"{url} gave no usable FindServers answer: {error!r}",))
        return answer_of(url, described)

    async def _reachable(self, host: str, port: int) -> bool:
        try:
            async with asyncio.timeout(self._check_timeout):
                _, writer = await asyncio.open_connection(host, port)
        except (OSError, TimeoutError):
            return False
        writer.close()
        await writer.wait_closed()
        return True

    async def _addresses(self, hosts: set[str]) -> dict[str, frozenset[Address]]:
        """The addresses of each host that resolves within one shared timeout, so a slow name
        server costs a round RESOLVE_TIMEOUT_S however many names an answer holds. An
        unspecified address (0.0.0.0, ::), which a server bound to every interface may
        announce, does not count."""
        loop = asyncio.get_running_loop()

        async def resolve(host: str) -> frozenset[Address]:
            try:
                found = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
            except OSError:
                return frozenset()
            resolved = (unzoned(str(address[4][0])) for address in found)
            return frozenset(address for address in resolved if address is not None)

        tasks = {
            host: asyncio.create_task(resolve(host)) for host in hosts if not is_unspecified(host)
        }
        if not tasks:
            return {}
        done, waiting = await asyncio.wait(tasks.values(), timeout=RESOLVE_TIMEOUT_S)
        for task in waiting:
            task.cancel()
        return {host: task.result() for host, task in tasks.items() if task in done}


class OpcUa:
    """The opcua handler; a server on the network is seen from every node (shared)."""

    name = NAME

    def __init__(
        self,
        *,
        shared: bool = True,
        check_timeout: float = CHECK_TIMEOUT_S,
        request_timeout: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self.shared = shared
        self._check_timeout = check_timeout
        self._request_timeout = request_timeout

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        parsed = details_of(details)
        from akri.discovery_handlers.opcua import client  # asyncua, only when it is needed

        finder = Finder(
            client.find_servers,
            check_timeout=self._check_timeout,
            request_timeout=self._request_timeout,
        )
        sent: list[Device] | None = None
        while True:
            found = await finder.round(parsed)
            current = devices(found.servers, parsed)
            if found.problems:
                message = "; ".join(found.problems)[:MAX_PROBLEM_CHARS]
                if not current:
                    raise HandlerUnavailable(f"no OPC UA server found: {message}")
                log.warning("opcua answers refused: %s", message)
            if current != sent:
                yield current
                sent = current
            await asyncio.sleep(parsed.discovery_interval_seconds)


def from_environment(shared: bool | None, environ: Mapping[str, str]) -> OpcUa:
    """`akri-discovery-handler opcua`; servers are shared unless --no-shared."""
    return OpcUa(shared=True if shared is None else shared)
