"""The bundled handlers as the agent, `akri-discovery-handler` and the webhook find them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def add_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A distribution installed beside akri-py: a working handler and a parser that cannot load."""
    (tmp_path / "akri_add_on.py").write_text(
        "from akri.discovery_handlers.debug_echo import DebugEcho\n"
        "def make(shared, environ):\n"
        "    echo = DebugEcho(shared=bool(shared), availability_file=None)\n"
        "    echo.name = 'addOn'\n"
        "    return echo\n"
    )
    info = tmp_path / "akri_add_on-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: akri-add-on\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[akri.discovery_handlers]\naddOn = akri_add_on:make\n\n"
        "[akri.details_parsers]\naddOn = akri_add_on_missing:parse\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    details_parsers.cache_clear()
    yield
    details_parsers.cache_clear()


@pytest.mark.usefixtures("add_on")
def test_a_handler_installed_beside_akri_is_found() -> None:
    assert "addOn" in handler_names()
    assert handler_factory("addOn")(True, {}).name == "addOn"


@pytest.mark.usefixtures("add_on")
def test_a_parser_that_cannot_load_is_left_out_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert sorted(details_parsers()) == BUNDLED
    assert "cannot load the details parser of discovery handler 'addOn'" in caplog.text
