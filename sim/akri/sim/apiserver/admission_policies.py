"""ValidatingAdmissionPolicies: CEL checks the API server itself runs on every matching write.

A policy acts only through a binding (`policyName`) whose `validationActions` include Deny.
A write is checked when it matches the policy's `matchConstraints` and the binding's
`matchResources` (resource rules with operations, API groups, versions, resources and scope,
minus `excludeResourceRules`; `namespaceSelector`; `objectSelector`) and every
`matchConditions` expression holds. `variables` are computed in order, each seeing the earlier
ones as `variables.<name>`; then each validation must hold for `object` (null on DELETE),
`oldObject` (null on CREATE), `request` (operation, userInfo with extra, namespace, name,
subResource, kind, resource) and `namespaceObject`. The first that does not refuses the write
as kube-apiserver does (`ValidatingAdmissionPolicy '<p>' with binding '<b>' denied request:`
and the validation's message, messageExpression or `failed expression: <expr>`; reason
Invalid, 422, unless the validation names another). An expression that fails to evaluate
refuses the write under `failurePolicy: Fail` (the default) and is passed over under Ignore.
Not emulated: `paramKind`/`paramRef` (a policy with params is refused when bound), the
`authorizer` variable, and Warn/Audit (only Deny acts here).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError

from akri.sim.apiserver import errors
from akri.sim.apiserver.apps_kinds import selector_labels
from akri.sim.apiserver.cel_rules import program
from akri.sim.apiserver.resources import ResourceType
from akri.sim.apiserver.store import Store
from akri.sim.apiserver.webhooks import Write, matches_rule

JSON = dict[str, Any]
GROUP = "admissionregistration.k8s.io"
POLICIES = (GROUP, "validatingadmissionpolicies")
BINDINGS = (GROUP, "validatingadmissionpolicybindings")
# The status reasons a validation may name, and their HTTP codes.
REASONS = {"Unauthorized": 401, "Forbidden": 403, "Invalid": 422, "RequestEntityTooLarge": 413}
_CEL_ERRORS = (CELEvalError, CELParseError, TypeError, ValueError, KeyError, AttributeError)


class _Failed(Exception):
    """An expression that could not be evaluated."""


@dataclass(frozen=True)
class _Refusal:
    message: str
    reason: str


def _matches(match: JSON | None, write: Write, namespace_labels: dict[str, str] | None) -> bool:
    """Whether `write` is one `match` (matchConstraints or matchResources) selects."""
    match = match or {}
    rules = match.get("resourceRules")
    if rules is not None and not any(matches_rule(rule, write) for rule in rules):
        return False
    if any(matches_rule(rule, write) for rule in match.get("excludeResourceRules") or []):
        return False
    if namespace_labels is not None and not selector_labels(match.get("namespaceSelector")).matches(
        namespace_labels
    ):
        return False
    subject = write.obj if write.obj is not None else write.old or {}
    labels = (subject.get("metadata") or {}).get("labels")
    return selector_labels(match.get("objectSelector")).matches(labels)


def request_of(write: Write) -> JSON:
    """The `request` variable: the admission request's attributes."""
    resource = write.resource
    kind = {"group": resource.group, "version": resource.version, "kind": resource.kind}
    gvr = {"group": resource.group, "version": resource.version, "resource": resource.plural}
    return {
        "kind": kind,
        "resource": gvr,
        "requestKind": kind,
        "requestResource": gvr,
        "subResource": write.subresource,
        "name": write.name,
        "namespace": write.namespace,
        "operation": write.operation,
        "userInfo": {
            "username": write.user.name,
            "groups": list(write.user.groups),
            "extra": write.user.extra_map,
        },
        "dryRun": False,
    }


def _evaluate(expression: str, activation: JSON) -> Any:
    try:
        result = program(expression).evaluate(activation)
    except _CEL_ERRORS as error:
        raise _Failed(str(error) or type(error).__name__) from error
    if isinstance(result, CELEvalError):
        raise _Failed(str(result.args[0] if result.args else result))
    if type(result) is str:  # cel-python's `+` of strings gives a plain str, whose methods
        return celtypes.StringType(result)  # (contains, ...) a later expression could not call
    return result


def _activation(write: Write, namespace: JSON | None) -> JSON:
    return {
        "object": json_to_cel(write.obj),
        "oldObject": json_to_cel(write.old),
        "request": json_to_cel(request_of(write)),
        "namespaceObject": json_to_cel(namespace),
        "params": json_to_cel(None),
    }


@dataclass(frozen=True)
class _Variables:
    """The computed `variables`, and the errors of those that failed to evaluate: an error
    only for the expressions that read them, as the API server computes them lazily."""

    values: celtypes.MapType
    errors: dict[str, str]

    def error_in(self, expression: str) -> str | None:
        return next(
            (e for name, e in self.errors.items() if f"variables.{name}" in expression), None
        )


def _variables(policy: JSON, activation: JSON) -> _Variables:
    values = celtypes.MapType()
    failed: dict[str, str] = {}
    for variable in policy.get("variables") or []:
        name, expression = variable.get("name", ""), variable.get("expression", "")
        try:
            error = _Variables(values, failed).error_in(expression)
            if error is not None:
                raise _Failed(error)
            values[celtypes.StringType(name)] = _evaluate(
                expression, {**activation, "variables": values}
            )
        except _Failed as failure:
            failed[name] = str(failure)
    return _Variables(values, failed)


def _validate(policy: JSON, activation: JSON) -> Iterator[_Refusal]:
    """The refusals the policy's validations give (errors under failurePolicy Fail included)."""
    fail_closed = policy.get("failurePolicy", "Fail") != "Ignore"
    variables = _variables(policy, activation)
    activation = {**activation, "variables": variables.values}
    for validation in policy.get("validations") or []:
        expression = validation.get("expression", "")
        try:
            error = variables.error_in(expression)
            if error is not None:
                raise _Failed(error)
            passed = bool(_evaluate(expression, activation))
        except _Failed as failure:
            if fail_closed:
                yield _Refusal(f"expression '{expression}' resulted in error: {failure}", "Invalid")
            continue
        if not passed:
            yield _Refusal(_message(validation, activation), validation.get("reason") or "Invalid")


def _message(validation: JSON, activation: JSON) -> str:
    if validation.get("messageExpression"):
        try:
            text = _evaluate(validation["messageExpression"], activation)
        except _Failed:
            text = ""
        if isinstance(text, str) and text.strip() and "\n" not in text:
            return str(text)
    return str(validation.get("message") or f"failed expression: {validation.get('expression')}")


def _conditions_hold(policy: JSON, activation: JSON) -> bool:
    """matchConditions: all true (an error counts as a failure under Fail)."""
    for condition in policy.get("matchConditions") or []:
        try:
            if not bool(_evaluate(condition.get("expression", ""), activation)):
                return False
        except _Failed as failure:
            if policy.get("failurePolicy", "Fail") == "Ignore":
                return False
            raise errors.ApiError(
                403, "Forbidden",
                f"failed to evaluate match condition {condition.get('name')}: {failure}",
            ) from failure  # fmt: skip
    return True


def _refusal(
    resource: ResourceType, write: Write, policy: str, binding: str, why: _Refusal
) -> errors.ApiError:
    message = (
        f"ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: "
        f"{why.message}"
    )
    details: JSON = {"name": write.name, "kind": resource.plural, "causes": [{"message": message}]}
    if resource.group:
        details["group"] = resource.group
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    return errors.ApiError(
        REASONS.get(why.reason, 422), why.reason,
        f'{qualified} "{write.name}" is forbidden: {message}', details,
    )  # fmt: skip


def admit(store: Store, write: Write) -> None:
    """Raise the first refusal of a bound policy that applies to `write`; return otherwise."""
    bindings = store.objects(BINDINGS)
    if not bindings:
        return
    namespace: JSON | None = None
    namespace_labels: dict[str, str] | None = None
    if write.resource.namespaced:
        namespace = store.peek(("", "namespaces"), "", write.namespace)
        namespace_labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
    for binding in sorted(bindings, key=lambda b: b["metadata"]["name"]):
        spec = binding.get("spec") or {}
        if "Deny" not in (spec.get("validationActions") or []):
            continue
        policy = store.peek(POLICIES, "", spec.get("policyName", ""))
        if policy is None:
            continue
        policy_spec = policy.get("spec") or {}
        if not _matches(policy_spec.get("matchConstraints"), write, namespace_labels):
            continue
        if spec.get("matchResources") and not _matches(
            spec["matchResources"], write, namespace_labels
        ):
            continue
        if policy_spec.get("paramKind"):
            raise errors.internal("the emulator does not evaluate policies with paramKind")
        activation = _activation(write, namespace)
        if not _conditions_hold(policy_spec, activation):
            continue
        for why in _validate(policy_spec, activation):
            raise _refusal(
                write.resource, write, policy["metadata"]["name"], binding["metadata"]["name"], why
            )
