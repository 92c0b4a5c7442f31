"""Discovery handlers and their details parsers, found through Python entry points.

A distribution (akri-py itself, or one beside it) offers a handler under its Configuration
name (`spec.discoveryHandler.name`) in two groups:

- `akri.discovery_handlers`: a `HandlerFactory`. The agent calls it to embed the handler,
  `akri-discovery-handler NAME` to serve it over `discovery.proto`.
- `akri.details_parsers`: a `DetailsParser` that raises `InvalidDetails`. The controller's
  admission webhook runs it on every Configuration naming the handler, so a Configuration the
  handler would refuse is refused at `kubectl apply`; it is loaded into the controller, so
  its module should import no device library.

Neither the agent nor the controller imports a handler package: each loads only the entry
points it needs, when it needs them.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Protocol, cast, runtime_checkable

from akri.discovery.handler import DiscoveryHandler

log = logging.getLogger(__name__)

HANDLERS = "akri.discovery_handlers"
DETAILS_PARSERS = "akri.details_parsers"

HandlerFactory = Callable[[bool | None, Mapping[str, str]], DiscoveryHandler]
"""Makes the handler: `shared` overrides its default when not None; `environ` holds the
variables it reads. ValueError says what is wrong with them."""

DetailsParser = Callable[[str], object]
"""The parsed `discoveryDetails`; InvalidDetails names what is wrong with them."""


@runtime_checkable
class SubsystemRules(Protocol):
    """Parsed details whose rules pick host devices by kernel subsystem (udev's): the admission
    webhook holds them to the subsystems the operator allows."""

    def unconfined_rule(self, allowed: frozenset[str]) -> str | None:
        """The first rule that may match a device of a subsystem outside `allowed`, or None."""
        ...


def handler_names() -> list[str]:
    """Every installed handler, sorted, without loading any."""
    return sorted(set(entry_points(group=HANDLERS).names))


def handler_factory(name: str) -> HandlerFactory:
    """The factory of handler `name`, its module imported now; LookupError when none is."""
    for found in entry_points(group=HANDLERS, name=name):
        return cast(HandlerFactory, found.load())
    raise LookupError(f"no discovery handler named {name!r} is installed")


@functools.cache
def details_parsers() -> Mapping[str, DetailsParser]:
    """Every installed handler's details parser by handler name, loaded once per process. One
    that fails to load is left out (its Configurations are let through, as an unknown
    handler's are) and logged, so a broken add-on cannot stop admission."""
    parsers: dict[str, DetailsParser] = {}
    for found in entry_points(group=DETAILS_PARSERS):
        try:
            parsers.setdefault(found.name, cast(DetailsParser, found.load()))
        except Exception:
            log.exception("cannot load the details parser of discovery handler %r", found.name)
    return parsers
