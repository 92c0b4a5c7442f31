"""The one OPC UA call the handler makes: FindServers, anonymous and unsecured, as discovery is.

Importing asyncua (its generated OPC UA types) took 1.9 s of CPU and 23 MB of resident memory
here (35.5 MB -> 58.5 MB, measured at 08:20 UTC on the shared 2-core host), so only the opcua
handler imports this module, and only once a Configuration asks for it. The limits
sent in Hello bound what an honest server answers; asyncua enforces them on what arrives.
"""

from __future__ import annotations

from asyncua.client.client import Client

from akri.discovery_handlers.opcua.servers import Described

MAX_MESSAGE_BYTES = 1024 * 1024
MAX_CHUNKS = 64


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


async def find_servers(url: str, request_timeout_s: float) -> list[Described]:
    """Every ApplicationDescription the endpoint at `url` answers FindServers with; each
    request of the exchange may take `request_timeout_s`."""
    client = Client(url, timeout=request_timeout_s)
    client.max_messagesize = MAX_MESSAGE_BYTES
    client.max_chunkcount = MAX_CHUNKS
    found = await client.connect_and_find_servers()
    return [
        (
            _text(d.ApplicationUri),
            _text(getattr(d.ApplicationName, "Text", None)),
            int(d.ApplicationType),
            [_text(u) for u in d.DiscoveryUrls or []],
        )
        for d in found
    ]
