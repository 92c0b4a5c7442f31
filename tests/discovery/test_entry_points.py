"""The bundled handlers as the agent, `akri-discovery-handler` and the webhook find them."""

from __future__ import annotations

import pytest

from akri.discovery.entry_points import details_parsers, handler_factory, handler_names
from akri.discovery.model import InvalidDetails

BUNDLED = ["debugEcho", "mdns", "onvif", "opcua", "udev"]


def test_every_bundled_handler_is_installed_with_its_details_parser() -> None:
    assert handler_names() == BUNDLED
    assert sorted(details_parsers()) == BUNDLED


@pytest.mark.parametrize("name", BUNDLED)
def test_each_factory_makes_the_handler_it_is_named_after(name: str) -> None:
    assert handler_factory(name)(False, {}).name == name


@pytest.mark.parametrize("name", BUNDLED)
def test_each_details_parser_refuses_what_is_not_a_mapping(name: str) -> None:
    with pytest.raises(InvalidDetails, match=name):
        details_parsers()[name]("[1, 2]")


def test_an_unknown_handler_is_a_lookup_error() -> None:
    with pytest.raises(LookupError, match="no discovery handler named 'camera' is installed"):
        handler_factory("camera")
