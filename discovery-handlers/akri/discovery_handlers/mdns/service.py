"""Pure: mdns discoveryDetails, which announced services pass them, and their device properties.

A service is identified by its full DNS-SD name (`printer-1._ipp._tcp.local.`), unique on the
link. Filters use the instance name (`printer-1`), the port and TXT values; the name and TXT
filters take regular expressions found anywhere in the value (anchor with ^ and $).
"""

from __future__ import annotations

import logging
import operator
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from akri.discovery.details import parse_details
from akri.discovery.model import Device
from akri.discovery_handlers.filters import FilterList, admits, found
from akri.naming import env_suffix

log = logging.getLogger(__name__)

NAME = "mdns"
EXAMPLE = "serviceTypes: [_http._tcp.local.]"
PREFIX = "MDNS_"
TXT_PREFIX = "MDNS_TXT_"
_SERVICE_TYPE = re.compile(r"^(_[A-Za-z0-9-]+\._sub\.)?_[A-Za-z0-9-]+\._(tcp|udp)\.local\.$")


def _service_type(value: str) -> str:
    if not _SERVICE_TYPE.match(value):
        raise ValueError(f"a service type looks like _http._tcp.local., got {value!r}")
    return value


class Details(BaseModel):
    """`discoveryDetails` of an mdns Configuration."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)
    service_types: list[Annotated[str, AfterValidator(_service_type)]] = Field(
        alias="serviceTypes", min_length=1
    )
    names: FilterList[re.Pattern[str]] | None = None
    ports: FilterList[int] | None = None
    txt_records: dict[str, FilterList[re.Pattern[str]]] = Field(
        default_factory=dict, alias="txtRecords"
    )


def details_of(details: str) -> Details:
    return parse_details(NAME, details, Details, EXAMPLE)


@dataclass(frozen=True)
class Service:
    """A resolved DNS-SD service; a TXT key without a value has the value None."""

    name: str
    service_type: str
    host: str
    addresses: tuple[str, ...]
    port: int
    txt: Mapping[str, str | None]

    @property
    def instance(self) -> str:
        return self.name.removesuffix("." + self.service_type)


def passes(service: Service, details: Details) -> bool:
    def txt_value(key: str) -> list[str] | None:
        return [service.txt[key] or ""] if key in service.txt else None

    return (
        admits(details.names, [service.instance], found)
        and admits(details.ports, [service.port], operator.eq)
        and all(admits(f, txt_value(key), found) for key, f in details.txt_records.items())
    )


def properties(service: Service) -> dict[str, str]:
    """Name, host, addresses, port, and one `MDNS_TXT_<KEY>` per TXT record.

    Two keys that read the same once made env-safe keep the first in sorted order; the others
    are dropped with a warning rather than overwriting each other at random.
    """
    result = {
        f"{PREFIX}NAME": service.name,
        f"{PREFIX}INSTANCE": service.instance,
        f"{PREFIX}SERVICE_TYPE": service.service_type,
        f"{PREFIX}HOST": service.host,
        f"{PREFIX}ADDRESSES": ",".join(service.addresses),
        f"{PREFIX}PORT": str(service.port),
    }
    for key in sorted(service.txt):
        name = TXT_PREFIX + env_suffix(key)
        if name in result:
            log.warning(
                "mdns service %s: TXT key %r dropped, it clashes as %s", service.name, key, name
            )
            continue
        result[name] = service.txt[key] or ""
    return result


def devices(services: Iterable[Service], details: Details) -> list[Device]:
    """The services that pass the filters, as Devices sorted by name."""
    chosen = sorted((s for s in services if passes(s, details)), key=lambda s: s.name)
    return [Device(s.name, properties(s)) for s in chosen]
