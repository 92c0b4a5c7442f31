"""Pure: which username and password to use for a camera, from the discoveryProperties.

Akri's forms, most specific first: `username_<uuid>`/`password_<uuid>`; the JSON list in
`device_credential_list` naming properties that map uuid -> {username, password,
base64encoded}; the JSON list in `device_credential_ref_list` naming properties that map
uuid -> {username_ref, password_ref} (names of further properties); then
`username_default`/`password_default`. Uuids compare like endpoint uuids (no `urn:uuid:`,
lower case). Secrets never appear in reprs or messages.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from akri.discovery.model import InvalidProperties
from akri.discovery_handlers.onvif.wsdiscovery import endpoint_uuid

LIST = "device_credential_list"
REF_LIST = "device_credential_ref_list"
DEFAULT = "default"


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(default="", repr=False)


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    username: str
    password: str = ""
    base64encoded: bool = False


class _RefEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    username_ref: str
    password_ref: str | None = None


Entry = TypeVar("Entry", _Entry, _RefEntry)


def _text(properties: Mapping[str, bytes], name: str) -> str:
    if name not in properties:
        raise InvalidProperties(f"onvif credentials name the missing property {name!r}")
    try:
        return properties[name].decode()
    except UnicodeDecodeError:
        raise InvalidProperties(f"onvif property {name!r} is not UTF-8") from None


def _json(properties: Mapping[str, bytes], name: str) -> object:
    try:
        return json.loads(_text(properties, name))
    except json.JSONDecodeError:
        raise InvalidProperties(f"onvif property {name!r} is not valid JSON") from None


def _names(properties: Mapping[str, bytes], name: str) -> list[str]:
    names = _json(properties, name) if name in properties else []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidProperties(f"onvif property {name!r} must be a JSON list of property names")
    return names


def _entries(properties: Mapping[str, bytes], name: str, model: type[Entry]) -> dict[str, Entry]:
    raw = _json(properties, name)
    if not isinstance(raw, dict):
        raise InvalidProperties(f"onvif property {name!r} must map device uuids to credentials")
    try:
        return {endpoint_uuid(key): model.model_validate(value) for key, value in raw.items()}
    except ValidationError as error:
        fields = ", ".join(".".join(map(str, e["loc"])) for e in error.errors())
        raise InvalidProperties(f"onvif property {name!r} has bad entries: {fields}") from None


def _from_entry(name: str, entry: _Entry) -> Credentials:
    if not entry.base64encoded:
        return Credentials(entry.username, entry.password)
    try:
        return Credentials(entry.username, base64.b64decode(entry.password, validate=True).decode())
    except (binascii.Error, UnicodeDecodeError):
        raise InvalidProperties(f"onvif property {name!r}: a password is not base64") from None


def _from_ref(properties: Mapping[str, bytes], entry: _RefEntry) -> Credentials:
    password = _text(properties, entry.password_ref) if entry.password_ref else ""
    return Credentials(_text(properties, entry.username_ref), password)


def credential_table(properties: Mapping[str, bytes]) -> dict[str, Credentials]:
    """uuid (or `default`) -> credentials; raises InvalidProperties on unusable properties."""
    table: dict[str, Credentials] = {}
    for name in properties:
        if name.startswith("username_"):
            suffix = name.removeprefix("username_")
            password = "password_" + suffix
            key = DEFAULT if suffix == DEFAULT else endpoint_uuid(suffix)
            table[key] = Credentials(
                _text(properties, name),
                _text(properties, password) if password in properties else "",
            )
    for name in _names(properties, LIST):
        for key, entry in _entries(properties, name, _Entry).items():
            table.setdefault(key, _from_entry(name, entry))
    for name in _names(properties, REF_LIST):
        for key, ref in _entries(properties, name, _RefEntry).items():
            table.setdefault(key, _from_ref(properties, ref))
    return table


def credentials_for(table: Mapping[str, Credentials], device_uuid: str) -> Credentials | None:
    return table.get(device_uuid, table.get(DEFAULT))
