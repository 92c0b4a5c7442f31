"""Kinds a chart creates beside its workloads: identity, RBAC, disruption budgets, priorities
and admission webhooks, with kubectl's printer columns.

The emulator stores them like any kind; `authz` reads the RBAC objects to authorize requests,
`webhooks` reads the ValidatingWebhookConfigurations, and the PodDisruptionBudget status is
written by the simulated cluster's disruption controller.
"""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.authz import RBAC_GROUP
from akri.sim.apiserver.core_kinds import AGE, NAME, path_cell
from akri.sim.apiserver.resources import Column, ResourceType
from akri.sim.apiserver.validation.admissionregistration import validating_webhook_configuration

JSON = dict[str, Any]

CREATED_AT = Column("Created At", "date", path_cell("metadata.creationTimestamp"))


def _role_ref(binding: JSON) -> str:
    ref = binding.get("roleRef") or {}
    return f"{ref.get('kind', '')}/{ref.get('name', '')}"


def _subjects(kind: str) -> Any:
    def cell(binding: JSON) -> str:
        names = []
        for subject in binding.get("subjects") or []:
            if subject.get("kind") != kind:
                continue
            namespace = subject.get("namespace")
            name = subject.get("name", "")
            names.append(f"{namespace}/{name}" if kind == "ServiceAccount" else name)
        return ", ".join(names)

    return cell


def _or_na(path: str) -> Any:
    cell = path_cell(path)
    return lambda obj: "N/A" if cell(obj) is None else cell(obj)


BINDING_COLUMNS = (
    NAME,
    Column("Role", "string", _role_ref),
    AGE,
    Column("Users", "string", _subjects("User"), priority=1),
    Column("Groups", "string", _subjects("Group"), priority=1),
    Column("ServiceAccounts", "string", _subjects("ServiceAccount"), priority=1),
)


def platform_kinds() -> list[ResourceType]:
    """Fresh definitions of ServiceAccount, the RBAC kinds, PDB, PriorityClass and webhooks."""
    return [
        ResourceType(
            "", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",),
            subresources=frozenset({"token"}),
            columns=(NAME, Column("Secrets", "integer", lambda sa: len(sa.get("secrets") or [])),
                     AGE),
        ),
        ResourceType(
            RBAC_GROUP, "v1", "Role", "roles", "role", True,
            columns=(NAME, CREATED_AT),
        ),
        ResourceType(
            RBAC_GROUP, "v1", "ClusterRole", "clusterroles", "clusterrole", False,
            columns=(NAME, CREATED_AT),
        ),
        ResourceType(
            RBAC_GROUP, "v1", "RoleBinding", "rolebindings", "rolebinding", True,
            columns=BINDING_COLUMNS,
        ),
        ResourceType(
            RBAC_GROUP, "v1", "ClusterRoleBinding", "clusterrolebindings", "clusterrolebinding",
            False, columns=BINDING_COLUMNS,
        ),
        ResourceType(
            "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget",
            True, ("pdb",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Min Available", "string", _or_na("spec.minAvailable")),
                Column("Max Unavailable", "string", _or_na("spec.maxUnavailable")),
                Column("Allowed Disruptions", "integer",
                       lambda pdb: (pdb.get("status") or {}).get("disruptionsAllowed", 0)),
                AGE,
            ),
            status_on_create={"disruptionsAllowed": 0, "currentHealthy": 0,
                              "desiredHealthy": 0, "expectedPods": 0},
            tracks_generation=True,
        ),
        ResourceType(
            "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False,
            ("pc",),
            columns=(
                NAME,
                Column("Value", "integer", path_cell("value")),
                Column("Global-Default", "boolean",
                       lambda pc: bool(pc.get("globalDefault", False))),
                AGE,
                Column("PreemptionPolicy", "string", path_cell("preemptionPolicy")),
            ),
            prepare_create=lambda pc: pc.setdefault("preemptionPolicy", "PreemptLowerPriority"),
        ),
        ResourceType(
            "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations", "validatingwebhookconfiguration", False,
            categories=("api-extensions",),
            columns=(
                NAME,
                Column("Webhooks", "integer", lambda vwc: len(vwc.get("webhooks") or [])),
                AGE,
            ),
            validate=validating_webhook_configuration,
            tracks_generation=True,
        ),
        # Answered at once, never stored (ApiHandlers): may this user do that?
        ResourceType(
            "authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
            "subjectaccessreview", False,
        ),
        ResourceType(
            "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies", "validatingadmissionpolicy", False,
            categories=("api-extensions",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Validations", "integer",
                       lambda p: len((p.get("spec") or {}).get("validations") or [])),
                Column("ParamKind", "string",
                       lambda p: (p.get("spec") or {}).get("paramKind") or "<unset>"),
                AGE,
            ),
            prepare_create=_default_policy,
            tracks_generation=True,
        ),
        ResourceType(
            "admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings", "validatingadmissionpolicybinding", False,
            categories=("api-extensions",),
            columns=(
                NAME,
                Column("PolicyName", "string", path_cell("spec.policyName")),
                Column("ParamRef", "string",
                       lambda b: str((b.get("spec") or {}).get("paramRef") or "<unset>")),
                AGE,
            ),
            tracks_generation=True,
        ),
    ]  # fmt: skip


def _default_policy(policy: JSON) -> None:
    """The defaults the API server gives a ValidatingAdmissionPolicy."""
    spec = policy.setdefault("spec", {})
    spec.setdefault("failurePolicy", "Fail")
    match = spec.setdefault("matchConstraints", {})
    match.setdefault("matchPolicy", "Equivalent")
    match.setdefault("namespaceSelector", {})
    match.setdefault("objectSelector", {})
