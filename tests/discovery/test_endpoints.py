"""Registered endpoints: which are accepted and how gRPC dials them."""

from __future__ import annotations

import re

import pytest

from akri.discovery.endpoints import NETWORK, UDS, Endpoint, parse_endpoint


@pytest.mark.parametrize(
    ("address", "kind", "target"),
    [
        ("/var/lib/akri/debugEcho.sock", UDS, "unix:///var/lib/akri/debugEcho.sock"),
        ("http://10.0.0.7:10000", NETWORK, "10.0.0.7:10000"),
        ("http://10.0.0.7:10000/", NETWORK, "10.0.0.7:10000"),
        ("http://[fd00::7]:10000", NETWORK, "[fd00::7]:10000"),
        ("http://handler.local:8080", NETWORK, "handler.local:8080"),
    ],
)
def test_accepted(address: str, kind: int, target: str) -> None:
    assert parse_endpoint(address, kind) == Endpoint(address, target)


@pytest.mark.parametrize(
    ("address", "kind", "message"),
    [
        ("debugEcho.sock", UDS, "not an absolute path"),
        ("", UDS, "not an absolute path"),
        ("/" + "d" * 105, UDS, "longer than 105 bytes"),
        ("10.0.0.7:10000", NETWORK, "http://<ip>:<port>"),
        ("https://10.0.0.7:10000", NETWORK, "http://<ip>:<port>"),
        ("http://10.0.0.7", NETWORK, "http://<ip>:<port>"),
        ("http://10.0.0.7:99999", NETWORK, "out of range"),
        ("http://10.0.0.7:10000/path", NETWORK, "http://<ip>:<port>"),
        ("http://user@10.0.0.7:10000", NETWORK, "http://<ip>:<port>"),
        ("http://:10000", NETWORK, "http://<ip>:<port>"),
        ("/a.sock", 7, "unknown endpoint type 7"),
    ],
)
def test_refused(address: str, kind: int, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_endpoint(address, kind)
