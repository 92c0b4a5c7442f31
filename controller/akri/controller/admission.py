"""Validating admission of Configurations: an AdmissionReview v1 in, its answer out. Pure.

The CRD's schema and CEL rules check everything the API server can see; what they cannot is
`discoveryDetails`, a YAML string only its handler understands. Here it is parsed with the
handler's own parser (`akri.discovery_handlers.catalog`), the same the handler runs before
discovering, so a Configuration refused here is one the agent would report as InvalidDetails.
Handlers not bundled with akri-py are let through: only they know their details.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from akri.agent.discovery.model import InvalidDetails
from akri.discovery_handlers.catalog import DETAILS_PARSERS

API_VERSION = "admission.k8s.io/v1"
FORBIDDEN = 403


class BadReview(ValueError):
    """The body is not an AdmissionReview v1 request (the server answers 400)."""


def configuration_problem(configuration: Mapping[str, Any]) -> str | None:
    """Why the handler refuses this Configuration's discoveryDetails; None when it accepts."""
    spec = configuration.get("spec")
    handler = spec.get("discoveryHandler") if isinstance(spec, Mapping) else None
    if not isinstance(handler, Mapping):
        return None  # the schema requires it; nothing handler-specific to add
    parse = DETAILS_PARSERS.get(str(handler.get("name")))
    details = handler.get("discoveryDetails", "")
    if parse is None or not isinstance(details, str):
        return None
    try:
        parse(details)
    except InvalidDetails as error:
        return f"spec.discoveryHandler.discoveryDetails: {error}"
    return None


def review(body: Any) -> dict[str, Any]:
    """The AdmissionReview answering `body`; BadReview when `body` is not a v1 request."""
    if not isinstance(body, Mapping) or body.get("apiVersion") != API_VERSION:
        raise BadReview(f"expected an AdmissionReview {API_VERSION}")
    request = body.get("request")
    if not isinstance(request, Mapping):
        raise BadReview("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise BadReview("the AdmissionReview request has no uid")
    configuration = request.get("object")
    problem = configuration_problem(configuration) if isinstance(configuration, Mapping) else None
    response: dict[str, Any] = {"uid": uid, "allowed": problem is None}
    if problem is not None:
        response["status"] = {"code": FORBIDDEN, "reason": "Forbidden", "message": problem}
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}
