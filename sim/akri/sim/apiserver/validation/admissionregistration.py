"""`admissionregistration.k8s.io/v1` ValidatingWebhookConfiguration, after
pkg/apis/admissionregistration/validation/validation.go (validateValidatingWebhook)."""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.validation import core, field, names
from akri.sim.apiserver.validation.field import Problems, as_dict, as_list

OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
SCOPES = ("*", "Cluster", "Namespaced")
FAILURE_POLICIES = ("Fail", "Ignore")
MATCH_POLICIES = ("Equivalent", "Exact")
SIDE_EFFECTS = ("None", "NoneOnDryRun")
REVIEW_VERSIONS = ("v1", "v1beta1")


def _enum(value: Any, allowed: tuple[str, ...], path: str) -> Problems:
    return [] if value is None or value in allowed else [field.not_supported(path, value, allowed)]


def _client_config(config: dict[str, Any], path: str) -> Problems:
    """ValidateWebhookClientConfig: a URL or a Service, the Service's path and port sane."""
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [field.required(path, "exactly one of url or service is required")]
    if service is None:
        return []
    service = as_dict(service)
    problems: Problems = []
    port = service.get("port")
    if port is not None and not (isinstance(port, int) and 1 <= port <= core.PORT_MAX):
        problems.append(
            field.invalid(
                f"{path}.service.port",
                port,
                "port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    service_path = service.get("path")
    if service_path is not None and not str(service_path).startswith("/"):
        problems.append(
            field.invalid(f"{path}.service.path", service_path, "must start with a '/'")
        )
    return problems


def _webhook(webhook: dict[str, Any], path: str) -> Problems:
    name = str(webhook.get("name") or "")
    problems = field.each(f"{path}.name", names.dns1123_subdomain(name), name)
    if len(name.split(".")) < 3:
        problems.append(
            field.invalid(
                f"{path}.name",
                name,
                "should be a domain with at least three segments separated by dots",
            )
        )
    for index, rule in enumerate(as_list(webhook.get("rules"))):
        rule, where = as_dict(rule), f"{path}.rules[{index}]"
        for position, operation in enumerate(as_list(rule.get("operations"))):
            problems += _enum(operation, OPERATIONS, f"{where}.operations[{position}]")
        problems += _enum(rule.get("scope"), SCOPES, f"{where}.scope")
    problems += _enum(webhook.get("failurePolicy"), FAILURE_POLICIES, f"{path}.failurePolicy")
    problems += _enum(webhook.get("matchPolicy"), MATCH_POLICIES, f"{path}.matchPolicy")
    side_effects = webhook.get("sideEffects")
    if side_effects is None:
        problems.append(field.not_supported(f"{path}.sideEffects", "", SIDE_EFFECTS))
    else:
        problems += _enum(side_effects, SIDE_EFFECTS, f"{path}.sideEffects")
    timeout = webhook.get("timeoutSeconds")
    if timeout is not None and not (isinstance(timeout, int) and 1 <= timeout <= 30):
        problems.append(
            field.invalid(
                f"{path}.timeoutSeconds",
                timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )
    problems += _client_config(as_dict(webhook.get("clientConfig")), f"{path}.clientConfig")
    versions = as_list(webhook.get("admissionReviewVersions"))
    if not versions:
        problems.append(
            field.required(f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1")
        )
    elif not any(v in REVIEW_VERSIONS for v in versions):
        problems.append(
            field.invalid(
                f"{path}.admissionReviewVersions",
                versions,
                "must include at least one of v1, v1beta1",
            )
        )
    return problems


def validating_webhook_configuration(obj: dict[str, Any]) -> Problems:
    """ValidateValidatingWebhookConfiguration: every webhook, with unique names."""
    problems: Problems = []
    seen: set[str] = set()
    duplicates: Problems = []
    for index, webhook in enumerate(as_list(obj.get("webhooks"))):
        webhook = as_dict(webhook)
        problems += _webhook(webhook, f"webhooks[{index}]")
        name = str(webhook.get("name") or "")
        if name in seen:
            duplicates.append(field.duplicate(f"webhooks[{index}].name", name))
        seen.add(name)
    return problems + duplicates
