"""Turn a Configuration's discoveryDetails (YAML) into a handler's pydantic model, or a reason.

Every handler refuses bad details the same way: an `InvalidDetails` whose text names the
handler and each offending field, because that text is what a user reads on the Configuration.
"""

from __future__ import annotations

from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from akri.discovery.model import InvalidDetails

Model = TypeVar("Model", bound=BaseModel)

MIN_POLL_INTERVAL_S = 1.0
"""The shortest interval a polling handler accepts between rounds (ONVIF probes, OPC UA
FindServers): each round reaches every device on the network, so a few a second is a flood."""


class _NoAliases(yaml.SafeLoader):
    """Safe YAML without anchors and aliases: a few hundred bytes of nested aliases expand to
    billions of nodes ("billion laughs"), which validating would never finish."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not allowed", event.start_mark
            )
        return super().compose_node(parent, index)


def problems(error: ValidationError) -> str:
    """One `field.path: message` per problem, joined, for a condition message."""
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
    )


def parse_details(handler: str, details: str, model: type[Model], example: str) -> Model:
    """`details` as `model`; an empty string means all defaults (Akri's CRD default is "")."""
    try:
        raw = yaml.load(details, Loader=_NoAliases)  # a SafeLoader
    except yaml.YAMLError as error:
        raise InvalidDetails(f"{handler} discoveryDetails are not valid YAML: {error}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidDetails(f"{handler} discoveryDetails must be a mapping like {example}")
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        raise InvalidDetails(f"invalid {handler} discoveryDetails: {problems(error)}") from None
