"""Every real handler in `akri-discovery-handler`: listed, refusing bad details over gRPC."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from akri.agent.discovery.registry import HandlerRegistry
from akri.discovery.entry_points import handler_factory
from akri.discovery.handler import DiscoveryHandler
from akri.discovery.model import InvalidDetails
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.main import main
from tests.discovery.conftest import fast_backoff, registered

BAD_DETAILS = {
    "udev": ("udevRules: ['RUN+=\"/bin/sh\"']", "unsupported udev key RUN"),
    "mdns": ("serviceTypes: [printers]", "a service type looks like _http._tcp.local."),
    "opcua": ("discoveryIntervalSeconds: 0", "discoveryIntervalSeconds"),
}


@pytest.fixture(params=sorted(BAD_DETAILS))
def handler(request: pytest.FixtureRequest) -> DiscoveryHandler:
    return handler_factory(request.param)(None, {})


@pytest.fixture
async def served(handler: DiscoveryHandler, socket_dir: Path) -> AsyncIterator[HandlerServer]:
    async with HandlerServer(handler, socket_dir, backoff=fast_backoff) as server:
        yield server


@pytest.mark.usefixtures("agent", "served")
async def test_bad_details_become_invalid_argument(
    handler: DiscoveryHandler, registry: HandlerRegistry
) -> None:
    await registered(registry, handler.name)
    (external,) = registry.handlers(handler.name).values()
    details, reason = BAD_DETAILS[handler.name]
    lists = external.discover(details, {})
    with pytest.raises(InvalidDetails, match=reason):
        await anext(lists)
    await lists.aclose()


def test_sharing_of_each_handler() -> None:
    assert handler_factory("udev")(None, {}).shared is False
    assert handler_factory("mdns")(None, {}).shared is True
    assert handler_factory("opcua")(None, {}).shared is True
    assert handler_factory("opcua")(False, {}).shared is False


def test_udev_refuses_shared(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["udev", "--shared"]) == 2
    assert "udev devices are local to their node" in capsys.readouterr().err
