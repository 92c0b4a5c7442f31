"""ValidatingAdmissionPolicies and their bindings: CEL the API server runs on matching writes.

Every policy is bound to the test's namespace only (by its `kubernetes.io/metadata.name`
label), so a real cluster's other writes never meet it; each is removed after the test.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import Cluster, status_body
from tests.security.support import token_client
from tests.support import eventually

NAME_LABEL = "kubernetes.io/metadata.name"


def policy(name: str, **spec: Any) -> Any:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {"resourceRules": [{
                "apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE", "DELETE"], "resources": ["configmaps"],
            }]},
            **spec,
        },
    }  # fmt: skip


def binding(name: str, namespace: str, actions: tuple[str, ...] = ("Deny",)) -> Any:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": list(actions),
            "matchResources": {"namespaceSelector": {"matchLabels": {NAME_LABEL: namespace}}},
        },
    }


def config_map(name: str, **data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data or None)


async def refused(call: Any) -> tuple[int, str, str]:
    """(code, reason, message) of a refused call; (200, "", "") when it went through."""
    try:
        await call
    except ApiException as error:
        body = status_body(error)
        return error.status, body.get("reason", ""), body.get("message", "")
    return 200, "", ""


@contextlib.asynccontextmanager
async def bound(
    api: client.ApiClient,
    namespace: str,
    spec: dict[str, Any],
    probe: str,
    actions: tuple[str, ...] = ("Deny",),
) -> AsyncIterator[str]:
    """A policy with `spec` bound to `namespace`, in force once creating ConfigMap `probe`
    (dry run) is refused; removed after the block."""
    name = f"conf-{uuid.uuid4().hex[:8]}"
    admission = client.AdmissionregistrationV1Api(api)
    await admission.create_validating_admission_policy(policy(name, **spec))
    await admission.create_validating_admission_policy_binding(binding(name, namespace, actions))
    core = client.CoreV1Api(api)

    async def in_force() -> bool:
        code, _, _ = await refused(
            core.create_namespaced_config_map(namespace, config_map(probe), dry_run="All")
        )
        return code != 200

    try:
        if probe:
            await eventually(in_force, f"the policy {name} to be in force")
        yield name
    finally:
        await admission.delete_validating_admission_policy_binding(name)
        await admission.delete_validating_admission_policy(name)


async def test_a_failed_validation_refuses_with_its_message_reason_and_binding(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    spec = {
        "variables": [{"name": "n", "expression": "object.metadata.name"}],
        "validations": [
            {"expression": "variables.n != 'plain'", "message": "no plain"},
            {"expression": "variables.n != 'bare'"},
            {"expression": "variables.n != 'loud'", "reason": "Forbidden",
             "messageExpression": "'name ' + variables.n + ' is taken'"},
        ],
    }  # fmt: skip
    async with bound(api, namespace, spec, probe="plain") as name:
        prefix = f"ValidatingAdmissionPolicy '{name}' with binding '{name}' denied request: "
        code, reason, message = await refused(
            core.create_namespaced_config_map(namespace, config_map("plain"))
        )
        assert (code, reason) == (422, "Invalid")
        assert message == f'configmaps "plain" is forbidden: {prefix}no plain'
        _, _, message = await refused(
            core.create_namespaced_config_map(namespace, config_map("bare"))
        )
        assert message.endswith(f"{prefix}failed expression: variables.n != 'bare'")
        code, reason, message = await refused(
            core.create_namespaced_config_map(namespace, config_map("loud"))
        )
        assert (code, reason) == (403, "Forbidden")
        assert message.endswith(f"{prefix}name loud is taken")
        await core.create_namespaced_config_map(namespace, config_map("fine"))


async def test_an_expression_error_refuses_under_fail_and_is_passed_over_under_ignore(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    rule = {"expression": "object.data.x == 'y'"}
    ignoring = {"failurePolicy": "Ignore", "validations": [
        rule, {"expression": "object.metadata.name != 'probe'"}]}  # fmt: skip
    # Ignore first: a real server drops a deleted policy a moment later, not at once.
    async with bound(api, namespace, ignoring, probe="probe"):
        await core.create_namespaced_config_map(namespace, config_map("no-data"))
    async with bound(api, namespace, {"validations": [rule]}, probe="also-no-data"):
        code, _, message = await refused(
            core.create_namespaced_config_map(namespace, config_map("also-no-data"))
        )
        assert code == 422
        assert "expression 'object.data.x == 'y'' resulted in error" in message
        await core.create_namespaced_config_map(namespace, config_map("good", x="y"))


async def test_match_conditions_old_objects_and_deletes(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """Only writes whose matchConditions hold are checked; `object` is null on DELETE and
    `oldObject` null on CREATE."""
    spec = {
        "matchConditions": [{"name": "guarded", "expression":
            "(request.operation == 'DELETE' ? oldObject : object).metadata.name"
            ".startsWith('guarded')"}],
        "validations": [
            {"expression": "request.operation != 'DELETE' || oldObject.data.lock != 'on'",
             "message": "locked"},
            {"expression":
                "request.operation != 'UPDATE' || object.data.lock == oldObject.data.lock",
             "message": "the lock stays"},
            {"expression": "request.operation != 'CREATE' || oldObject == null",
             "message": "no old object on create"},
        ],
    }  # fmt: skip
    await core.create_namespaced_config_map(namespace, config_map("other", lock="on"))
    async with bound(api, namespace, spec, probe=""):
        await core.create_namespaced_config_map(namespace, config_map("guarded", lock="on"))

        async def delete_refused() -> bool:
            code, _, _ = await refused(
                core.delete_namespaced_config_map("guarded", namespace, dry_run="All")
            )
            return code == 422

        await eventually(delete_refused, "the policy to refuse the delete")
        code, _, message = await refused(core.patch_namespaced_config_map(
            "guarded", namespace, {"data": {"lock": "off"}}))  # fmt: skip
        assert (code, message.split(": ")[-1]) == (422, "the lock stays")
        await core.delete_namespaced_config_map("other", namespace)  # no match: not checked


async def test_a_binding_without_deny_refuses_nothing(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    audit_only = {"validations": [{"expression": "false"}]}
    denying = {"validations": [{"expression": "object.metadata.name != 'probe'"}]}
    async with (
        bound(api, namespace, audit_only, probe="", actions=("Audit",)),
        bound(api, namespace, denying, probe="probe"),
    ):
        # both in force now: the Audit one alone did not refuse this
        await core.create_namespaced_config_map(namespace, config_map("audited"))


async def test_request_user_info_carries_the_node_of_a_node_bound_token(
    api: client.ApiClient, cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> None:
    """A token bound to a Node names it in `request.userInfo.extra` (Kubernetes >= 1.32)."""
    if cluster.server is not None:
        await core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="node-a")))
    node = await core.read_node("node-a")
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="agent"))
    )
    rbac = client.RbacAuthorizationV1Api(api)
    role: Any = {"metadata": {"name": "cm"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}]}  # fmt: skip
    role_binding: Any = {
        "metadata": {"name": "cm"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
        "subjects": [{"kind": "ServiceAccount", "name": "agent", "namespace": namespace}],
    }  # fmt: skip
    await rbac.create_namespaced_role(namespace, role)
    await rbac.create_namespaced_role_binding(namespace, role_binding)
    key = "authentication.kubernetes.io/node-name"
    spec = {"validations": [{
        "expression": f"!('{key}' in request.userInfo.extra) || "
                      f"object.metadata.name == request.userInfo.extra['{key}'][0]",
        "messageExpression": f"'only ' + request.userInfo.extra['{key}'][0]"}]}  # fmt: skip
    bound_ref = client.V1BoundObjectReference(
        kind="Node", api_version="v1", name="node-a", uid=node.metadata.uid
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600,
                                       bound_object_ref=bound_ref))  # fmt: skip
    issued = await core.create_namespaced_service_account_token("agent", namespace, request)
    async with (
        bound(api, namespace, spec, probe=""),
        await token_client(cluster, issued.status.token) as agent_api,
    ):
        agent = client.CoreV1Api(agent_api)

        async def refused_for_b() -> bool:
            code, _, message = await refused(agent.create_namespaced_config_map(
                namespace, config_map("node-b"), dry_run="All"))  # fmt: skip
            return code == 422 and message.endswith("only node-a")

        await eventually(refused_for_b, "the node-bound token to be checked")
        await agent.create_namespaced_config_map(namespace, config_map("node-a"))
        await core.create_namespaced_config_map(namespace, config_map("admin-may"))


@pytest.mark.emulator_only
async def test_a_policy_with_params_is_not_evaluated_silently(
    api: client.ApiClient, core: client.CoreV1Api, namespace: str
) -> None:
    """The emulator does not evaluate params: it says so instead of admitting."""
    spec = {"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": "true"}]}  # fmt: skip
    async with bound(api, namespace, spec, probe=""):
        code, _, _ = await refused(core.create_namespaced_config_map(namespace, config_map("p")))
        assert code == 500
