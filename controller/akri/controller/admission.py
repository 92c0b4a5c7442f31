"""Validating admission of Configurations: an AdmissionReview v1 in, its answer out. Pure.

The CRD's schema and CEL rules check everything the API server can see; what they cannot is
`discoveryDetails`, a YAML string only its handler understands. Here it is parsed with the
handler's own parser (`akri.discovery_handlers.catalog`), the same the handler runs before
discovering, so a Configuration refused here is one the agent would report as InvalidDetails.
Handlers not bundled with akri-py are let through: only they know their details.
`discoveryProperties` that name a Secret or ConfigMap of another namespace are refused with the
agent's own words (`akri.agent.discovery.properties`), before anything is looked up.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from akri.agent.discovery.model import InvalidDetails, InvalidProperties
from akri.agent.discovery.properties import sources
from akri.api import DiscoveryProperty
from akri.discovery_handlers.catalog import DETAILS_PARSERS

API_VERSION = "admission.k8s.io/v1"
FORBIDDEN = 403


class BadReview(ValueError):
    """The body is not an AdmissionReview v1 request (the server answers 400)."""


def properties_problem(handler: Mapping[str, Any], namespace: str) -> str | None:
    """Why the agent would refuse these discoveryProperties in `namespace` (another namespace's
    Secret or ConfigMap); None when it would read them."""
    listed = handler.get("discoveryProperties") or []
    try:
        sources([DiscoveryProperty.model_validate(p) for p in listed], namespace)
    except ValidationError:
        return None  # the schema's to refuse
    except InvalidProperties as error:
        return f"spec.discoveryHandler.discoveryProperties: {error}"
    return None


def configuration_problem(configuration: Mapping[str, Any], namespace: str) -> str | None:
    """Why the handler refuses this Configuration's discoveryDetails, or the agent its
    discoveryProperties in `namespace`; None when both accept."""
    spec = configuration.get("spec")
    handler = spec.get("discoveryHandler") if isinstance(spec, Mapping) else None
    if not isinstance(handler, Mapping):
        return None  # the schema requires it; nothing handler-specific to add
    if (problem := properties_problem(handler, namespace)) is not None:
        return problem
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
    namespace = str(request.get("namespace") or "")
    problem = (
        configuration_problem(configuration, namespace)
        if isinstance(configuration, Mapping)
        else None
    )
    response: dict[str, Any] = {"uid": uid, "allowed": problem is None}
    if problem is not None:
        response["status"] = {"code": FORBIDDEN, "reason": "Forbidden", "message": problem}
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}
