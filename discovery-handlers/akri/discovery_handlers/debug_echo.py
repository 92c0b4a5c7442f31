"""debugEcho: "discovers" the devices its details describe, for demos and tests.

Devices go offline and come back at run time, as with Akri's debugEcho: through an availability
file (the word OFFLINE takes every device offline; other lines name offline descriptions), or
in-process through `set_offline`, which the simulator uses to give each node its own view.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from akri.discovery import details as details_model
from akri.discovery.debug_echo import (
    AVAILABILITY_FILE_ENV,
    DEFAULT_AVAILABILITY_FILE,
    NAME,
    SHARED_ENV,
)
from akri.discovery.model import Device
from akri.settings import Variable, parse_bool

PROPERTY = "DEBUG_ECHO_DESCRIPTION"
OFFLINE = "OFFLINE"
ENVIRONMENT = (
    Variable(SHARED_ENV, "true", "whether devices are shared (--shared/--no-shared win)"),
    Variable(
        AVAILABILITY_FILE_ENV,
        str(DEFAULT_AVAILABILITY_FILE),
        "OFFLINE, or one description per line, takes devices offline",
    ),
)


class Details(BaseModel):
    """`discoveryDetails` of a debugEcho Configuration; anything else is refused."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    descriptions: list[Annotated[str, Field(min_length=1)]]


def parse_details(details: str) -> Details:
    """The parsed details; InvalidDetails says what is wrong, for the Configuration condition."""
    return details_model.parse_details("debugEcho", details, Details, "descriptions: [a]")


@dataclass(frozen=True)
class Availability:
    """Which devices are offline."""

    everything: bool = False
    descriptions: frozenset[str] = frozenset()

    def __or__(self, other: Availability) -> Availability:
        return Availability(
            self.everything or other.everything, self.descriptions | other.descriptions
        )

    def is_offline(self, description: str) -> bool:
        return self.everything or description in self.descriptions


def parse_availability(text: str) -> Availability:
    lines = {line.strip() for line in text.splitlines()} - {""}
    return Availability(OFFLINE in lines, frozenset(lines - {OFFLINE}))


def devices(descriptions: Iterable[str], offline: Availability) -> list[Device]:
    """One device per distinct online description, in the order given."""
    online = (d for d in dict.fromkeys(descriptions) if not offline.is_offline(d))
    return [Device(id=d, properties={PROPERTY: d}) for d in online]


class _AvailabilityFile:
    """The file's Availability, re-read only when a stat shows it changed."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._signature: tuple[int, int, int] | None = None
        self._value = Availability()

    def read(self) -> Availability:
        try:
            stat = self._path.stat()
            signature: tuple[int, int, int] | None = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            signature = None
        if signature != self._signature:
            self._signature = signature
            try:
                self._value = (
                    parse_availability(self._path.read_text()) if signature else (Availability())
                )
            except OSError:  # removed or unreadable since the stat: every device is online
                self._value = Availability()
        return self._value


class DebugEcho:
    """The embedded debugEcho handler; one instance serves any number of Configurations."""

    def __init__(
        self,
        *,
        shared: bool = True,
        availability_file: Path | None = DEFAULT_AVAILABILITY_FILE,
        poll_interval: float = 1.0,
    ) -> None:
        self.name = NAME
        self.shared = shared
        self._file = _AvailabilityFile(availability_file) if availability_file else None
        self._poll_interval = poll_interval
        self._set_offline = Availability()
        self._changed = asyncio.Event()

    def set_offline(self, descriptions: Iterable[str] = (), *, everything: bool = False) -> None:
        """Replace the in-process offline set (added to the file's); `set_offline()` clears it."""
        self._set_offline = Availability(everything, frozenset(descriptions))
        self._changed.set()
        self._changed = asyncio.Event()

    def offline(self) -> Availability:
        return self._set_offline | (self._file.read() if self._file else Availability())

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        descriptions = parse_details(details).descriptions
        sent: list[Device] | None = None
        while True:
            changed = self._changed
            current = devices(descriptions, self.offline())
            if current != sent:
                yield current
                sent = current
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._poll_interval if self._file else None):
                    await changed.wait()


def from_environment(shared: bool | None, environ: Mapping[str, str]) -> DebugEcho:
    """The handler `akri-discovery-handler debugEcho` runs and the agent embeds; `shared`
    None: from the env."""
    if shared is None:
        shared = parse_bool(SHARED_ENV, environ.get(SHARED_ENV, "true"))
    path = environ.get(AVAILABILITY_FILE_ENV, str(DEFAULT_AVAILABILITY_FILE))
    return DebugEcho(shared=shared, availability_file=Path(path))
