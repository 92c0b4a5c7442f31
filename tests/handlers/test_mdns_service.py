"""mdns's pure parts: details, filters on name, port and TXT, and the device properties."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from akri.discovery.model import Device, InvalidDetails
from akri.discovery_handlers.mdns.service import (
    Service,
    details_of,
    devices,
    passes,
    properties,
)
from akri.naming import env_suffix

TYPES = "serviceTypes: [_ipp._tcp.local.]\n"


def printer(
    name: str = "printer-1", port: int = 631, txt: Mapping[str, str | None] | None = None
) -> Service:
    return Service(
        name=f"{name}._ipp._tcp.local.",
        service_type="_ipp._tcp.local.",
        host=f"{name}.local.",
        addresses=("10.0.0.7", "fe80::1%2"),
        port=port,
        txt=txt or {},
    )


def test_details_defaults() -> None:
    details = details_of("serviceTypes: [_http._tcp.local., _printer._sub._http._tcp.local.]")
    assert details.service_types == ["_http._tcp.local.", "_printer._sub._http._tcp.local."]
    assert (details.names, details.ports, details.txt_records) == (None, None, {})


@pytest.mark.parametrize(
    ("details", "reason"),
    [
        ("", "serviceTypes: Field required"),
        ("serviceTypes: []", "at least 1 item"),
        ("serviceTypes: [_http._tcp]", "a service type looks like _http._tcp.local."),
        ("serviceTypes: [http._tcp.local.]", "a service type looks like"),
        ("serviceTypes: _http._tcp.local.", "serviceTypes: Input should be a valid list"),
        (TYPES + "names: {items: ['(']}", "names.items.0: Input should be a valid regular"),
        (TYPES + "names: {items: [a], action: include}", "names.action: Input should be"),
        (TYPES + "names: [a]", "names: Input should be a valid dictionary"),
        (TYPES + "ports: {items: ['80']}", "ports.items.0: Input should be a valid integer"),
        (TYPES + "txtRecords: {rp: {items: ['[']}}", r"txtRecords.rp.items.0: Input should"),
        (TYPES + "domains: [local.]", "domains: Extra inputs are not permitted"),
    ],
)
def test_bad_details(details: str, reason: str) -> None:
    with pytest.raises(InvalidDetails, match=f"invalid mdns discoveryDetails: .*{reason}"):
        details_of(details)


@pytest.mark.parametrize(
    ("filters", "service", "admitted"),
    [
        ("", printer(), True),
        ("names: {items: ['^printer-']}", printer(), True),
        ("names: {items: ['^printer-']}", printer("scanner-1"), False),
        ("names: {items: ['ipp']}", printer(), False),  # the instance name, not the full name
        ("names: {items: ['^printer-1$'], action: Exclude}", printer(), False),
        ("names: {items: ['^printer-1$'], action: Exclude}", printer("printer-2"), True),
        ("names: {items: [], action: Exclude}", printer(), True),
        ("names: {items: []}", printer(), False),
        ("ports: {items: [631, 80]}", printer(), True),
        ("ports: {items: [80]}", printer(), False),
        ("ports: {items: [631], action: Exclude}", printer(), False),
        ("txtRecords: {rp: {items: ['^ipp/print$']}}", printer(txt={"rp": "ipp/print"}), True),
        ("txtRecords: {rp: {items: ['^ipp/print$']}}", printer(txt={"rp": "ipp/fax"}), False),
        ("txtRecords: {rp: {items: ['^ipp/print$']}}", printer(), False),
        (
            "txtRecords: {rp: {items: ['fax'], action: Exclude}}",
            printer(txt={"rp": "ipp/print"}),
            True,
        ),
        # an unknown value fails every non-trivial filter, Exclude included (Akri's rule)
        ("txtRecords: {rp: {items: ['fax'], action: Exclude}}", printer(), False),
        ("txtRecords: {rp: {items: [], action: Exclude}}", printer(), True),
        ("txtRecords: {color: {items: ['']}}", printer(txt={"color": None}), True),
        (
            "names: {items: ['^printer-']}\nports: {items: [631]}\n"
            "txtRecords: {rp: {items: [print]}, ty: {items: [Brother]}}",
            printer(txt={"rp": "ipp/print", "ty": "Brother HL"}),
            True,
        ),
        (
            "names: {items: ['^printer-']}\nports: {items: [631]}\n"
            "txtRecords: {rp: {items: [print]}, ty: {items: [Brother]}}",
            printer(txt={"rp": "ipp/print", "ty": "Canon"}),
            False,
        ),
    ],
)
def test_filters(filters: str, service: Service, admitted: bool) -> None:
    assert passes(service, details_of(TYPES + filters)) is admitted


def test_properties() -> None:
    service = printer(txt={"rp": "ipp/print", "Color-Mode": None, "note": "x=y"})
    assert properties(service) == {
        "MDNS_NAME": "printer-1._ipp._tcp.local.",
        "MDNS_INSTANCE": "printer-1",
        "MDNS_SERVICE_TYPE": "_ipp._tcp.local.",
        "MDNS_HOST": "printer-1.local.",
        "MDNS_ADDRESSES": "10.0.0.7,fe80::1%2",
        "MDNS_PORT": "631",
        "MDNS_TXT_COLOR_MODE": "",
        "MDNS_TXT_NOTE": "x=y",
        "MDNS_TXT_RP": "ipp/print",
    }


@pytest.mark.parametrize(
    ("key", "suffix"),
    [
        ("rp", "RP"),
        ("Color-Mode", "COLOR_MODE"),
        ("adminurl", "ADMINURL"),
        ("a b.c", "A_B_C"),
        ("ü", "_"),
        ("9", "9"),
        ("", ""),
    ],
)
def test_env_suffix(key: str, suffix: str) -> None:
    assert env_suffix(key) == suffix


def test_clashing_txt_keys_keep_the_first_in_sorted_order(caplog: pytest.LogCaptureFixture) -> None:
    service = printer(txt={"a-b": "dash", "a.b": "dot", "a_b": "underscore"})
    with caplog.at_level(logging.WARNING):
        txt = {k: v for k, v in properties(service).items() if k.startswith("MDNS_TXT_")}
    assert txt == {"MDNS_TXT_A_B": "dash"}
    assert "TXT key 'a.b' dropped" in caplog.text
    assert "TXT key 'a_b' dropped" in caplog.text


def test_devices_are_the_admitted_services_by_name() -> None:
    services = [printer("printer-2"), printer("scanner"), printer("printer-1")]
    found = devices(services, details_of(TYPES + "names: {items: ['^printer-']}"))
    assert [d.id for d in found] == ["printer-1._ipp._tcp.local.", "printer-2._ipp._tcp.local."]
    assert found[0] == Device("printer-1._ipp._tcp.local.", properties(services[2]))
