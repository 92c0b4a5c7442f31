"""Fuzzing every handler's discoveryDetails: any text gives details or InvalidDetails, nothing else.

InvalidDetails is the component boundary: the agent turns it into the Configuration's
InvalidDetails condition. Anything else raised would be a crash of the discovery loop.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from akri.discovery.model import InvalidDetails
from akri.discovery_handlers import debug_echo
from akri.discovery_handlers.mdns import service as mdns
from akri.discovery_handlers.onvif import camera as onvif
from akri.discovery_handlers.udev import devices as udev

PARSERS: dict[str, tuple[Callable[[str], BaseModel], type[BaseModel]]] = {
    "debugEcho": (debug_echo.parse_details, debug_echo.Details),
    "udev": (udev.details_of, udev.Details),
    "onvif": (onvif.details_of, onvif.Details),
    "mdns": (mdns.details_of, mdns.Details),
}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(
        [
            "",
            "Include",
            "Exclude",
            "rwm",
            'KERNEL=="video[0-9]*"',
            'SUBSYSTEM=="usb", ATTR{idVendor}=="1234"',
            "KERNEL=",
            "_http._tcp.local.",
            "(a+)+$",
            "[",
            "127.0.0.1",
            "onvif://www.onvif.org/name/Lobby",
        ]
    ),
)
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)


def fields_of(model: type[BaseModel]) -> list[str]:
    return [info.alias or name for name, info in model.model_fields.items()]


@st.composite
def shaped(draw: st.DrawFn, model: type[BaseModel]) -> str:
    """A YAML mapping using the model's own field names, with random values: deep validation."""
    keys = draw(st.lists(st.sampled_from([*fields_of(model), "action", "items"]), max_size=4))
    values = {key: draw(documents) for key in keys}
    for key in draw(st.lists(st.sampled_from(fields_of(model)), max_size=2)):
        values[key] = {
            "action": draw(st.sampled_from(["Include", "Exclude", "x"])),
            "items": draw(st.lists(scalars, max_size=3)),
        }
    return yaml.safe_dump(values)


def parse_or_refuse(parse: Callable[[str], BaseModel], text: str) -> None:
    refused = ""
    try:
        parse(text)
    except InvalidDetails as error:
        refused = str(error) or "an empty message"
    assert refused != "an empty message"  # the condition message must say something


@pytest.mark.parametrize("handler", PARSERS)
@FUZZ
@given(data=st.data())
def test_any_details_parse_or_are_refused_with_a_reason(handler: str, data: st.DataObject) -> None:
    parse, model = PARSERS[handler]
    text = data.draw(
        st.one_of(
            st.text(max_size=200),
            documents.map(yaml.safe_dump),
            shaped(model),
        )
    )
    parse_or_refuse(parse, text)


@pytest.mark.parametrize("handler", PARSERS)
def test_yaml_aliases_are_refused_before_they_can_expand(handler: str) -> None:
    """A 'billion laughs' document is a few hundred bytes; validating it would never end."""
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 12)]
    parse, _ = PARSERS[handler]
    with pytest.raises(InvalidDetails, match="alias"):
        parse("\n".join(levels))


@pytest.mark.parametrize(
    "text",
    [
        "!!python/object/apply:os.system ['true']",
        "descriptions: !!binary aGVsbG8=",
        "? [a, b]\n: c",
        "descriptions: [a]\n---\ndescriptions: [b]",
        "\x00",
    ],
)
def test_unsafe_or_odd_yaml_is_refused(text: str) -> None:
    with pytest.raises(InvalidDetails):
        debug_echo.parse_details(text)
