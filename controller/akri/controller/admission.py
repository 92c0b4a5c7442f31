"""Validating admission of Configurations: an AdmissionReview v1 in, its answer out. Pure.

The CRD's schema and CEL rules check everything the API server can see; what they cannot is
`discoveryDetails`, a YAML string only its handler understands. Here it is parsed with the
handler's own parser (entry point group `akri.details_parsers`, `akri.discovery.entry_points`),
the same the handler runs before discovering, so a Configuration refused here is one the agent
would report as InvalidDetails. Handlers without a parser installed beside the controller are
let through: only they know their details. `discoveryProperties` that name a Secret or
ConfigMap of another namespace are refused with the agent's own words
(`akri.discovery.properties`), before anything is looked up.

The udev rules (any details that are `SubsystemRules`) are also held to the subsystems the
operator allows (`Policy`): a rule must match `SUBSYSTEM=="<allowed>"`, else it could hand a
broker any device node of the host (a disk, /dev/mem). A ValidatingAdmissionPolicy cannot
check this: the rules are YAML inside a string, and CEL has no YAML parser.

What the webhook also asks of the API server (webhook.py) is decided here too:
`access_needed` lists what the controller would create for the Configuration's author, which
the author must be allowed to create themselves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from akri.api import DiscoveryProperty
from akri.discovery.entry_points import SubsystemRules, details_parsers
from akri.discovery.model import InvalidDetails, InvalidProperties
from akri.discovery.properties import sources

API_VERSION = "admission.k8s.io/v1"
FORBIDDEN = 403


class BadReview(ValueError):
    """The body is not an AdmissionReview v1 request (the server answers 400)."""


@dataclass(frozen=True)
class Policy:
    """What the operator allows (chart values admission.udev.subsystems and
    admission.hostAccessNamespaces)."""

    udev_subsystems: frozenset[str] = frozenset()
    """Subsystems udev rules may match; empty: any."""
    trusted_namespaces: frozenset[str] = frozenset()
    """Namespaces held to none of this (trusted like the cluster admin)."""


@dataclass(frozen=True)
class Access:
    """Something the controller creates for a Configuration, which its author must be allowed
    to create in the Configuration's namespace."""

    group: str
    resource: str
    why: str


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


def configuration_problem(
    configuration: Mapping[str, Any], namespace: str = "", policy: Policy = Policy()
) -> str | None:
    """Why this Configuration is refused (its handler refuses its discoveryDetails, the agent
    its discoveryProperties in `namespace`, or its udev rules reach beyond the allowed
    subsystems); None when it is accepted."""
    spec = configuration.get("spec")
    handler = spec.get("discoveryHandler") if isinstance(spec, Mapping) else None
    if not isinstance(handler, Mapping):
        return None  # the schema requires it; nothing handler-specific to add
    if (problem := properties_problem(handler, namespace)) is not None:
        return problem
    parse = details_parsers().get(str(handler.get("name")))
    details = handler.get("discoveryDetails", "")
    if parse is None or not isinstance(details, str):
        return None
    try:
        parsed = parse(details)
    except InvalidDetails as error:
        return f"spec.discoveryHandler.discoveryDetails: {error}"
    if isinstance(parsed, SubsystemRules) and namespace not in policy.trusted_namespaces:
        return _udev_problem(parsed, policy.udev_subsystems, namespace)
    return None


def _udev_problem(details: SubsystemRules, allowed: frozenset[str], namespace: str) -> str | None:
    """A rule that may match a device outside `allowed` (any subsystem when empty)."""
    if not allowed or (rule := details.unconfined_rule(allowed)) is None:
        return None
    return (
        f"spec.discoveryHandler.discoveryDetails: udev rule {rule!r} must match "
        f'SUBSYSTEM=="<subsystem>" with one of {", ".join(sorted(allowed))} in '
        f"namespace {namespace} (admission.udev.subsystems; see docs/security.md)"
    )


def access_needed(configuration: Any, old: Any = None) -> list[Access]:
    """What the controller would create for this Configuration (its brokers and Services),
    where it differs from the `old` one: an edit that leaves them alone needs no more."""

    def parts(obj: Any) -> dict[str, Any]:
        spec = obj.get("spec") if isinstance(obj, Mapping) else None
        spec = spec if isinstance(spec, Mapping) else {}
        brokers = spec.get("brokerSpec")
        brokers = brokers if isinstance(brokers, Mapping) else {}
        found = {f"brokerSpec.{k}": brokers.get(k) for k in ("brokerPodSpec", "brokerJobSpec")}
        found |= {k: spec.get(k) for k in ("instanceServiceSpec", "configurationServiceSpec")}
        return {k: v for k, v in found.items() if v is not None}

    before = parts(old)
    changed = [k for k, v in parts(configuration).items() if before.get(k) != v]
    kinds = {
        "brokerSpec.brokerPodSpec": ("", "pods"),
        "brokerSpec.brokerJobSpec": ("batch", "jobs"),
        "instanceServiceSpec": ("", "services"),
        "configurationServiceSpec": ("", "services"),
    }
    needed: dict[tuple[str, str], list[str]] = {}
    for part in changed:
        needed.setdefault(kinds[part], []).append(part)
    return [Access(group, resource, " and ".join(why)) for (group, resource), why in needed.items()]


def refusal(uid: str, message: str) -> dict[str, Any]:
    """The AdmissionReview that refuses request `uid` with `message`."""
    response = {
        "uid": uid,
        "allowed": False,
        "status": {"code": FORBIDDEN, "reason": "Forbidden", "message": message},
    }
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


def review(body: Any, policy: Policy = Policy()) -> dict[str, Any]:
    """The AdmissionReview answering `body` (access checks aside); BadReview when `body` is
    not a v1 request."""
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
        configuration_problem(configuration, namespace, policy)
        if isinstance(configuration, Mapping)
        else None
    )
    if problem is not None:
        return refusal(uid, problem)
    response = {"uid": uid, "allowed": True}
    return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}
