"""RBAC decisions over plain objects: rule matching, binding scopes and refusal messages."""

from __future__ import annotations

from typing import Any

import pytest

from akri.sim.apiserver import errors
from akri.sim.apiserver.authn import ADMIN, TokenIssuer, service_account_user
from akri.sim.apiserver.authz import Attributes, Authorizer

ROBOT = service_account_user("ns", "robot")
SUBJECT = {"kind": "ServiceAccount", "name": "robot"}  # namespace: the binding's


def authorizer(**objects: list[dict[str, Any]]) -> Authorizer:
    return Authorizer(lambda plural: objects.get(plural, []))


def role(name: str, *rules: dict[str, Any], namespace: str = "ns") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "rules": list(rules)}


def binding(kind: str, name: str, namespace: str = "ns", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": f"b-{name}", "namespace": namespace},
        "roleRef": {"kind": kind, "name": name},
        "subjects": [SUBJECT],
        **extra,
    }


def allowed(rbac: Authorizer, request: Attributes) -> bool:
    try:
        rbac.check(ROBOT, request)
    except errors.ApiError as error:
        return error.code != 403  # any other refusal fails the comparison
    return True


@pytest.mark.parametrize(
    ("rule", "request_", "expected"),
    [
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
         Attributes("get", "", "pods", namespace="ns", name="p"), True),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
         Attributes("get", "", "pods", "status", "ns", "p"), False),
        ({"verbs": ["*"], "apiGroups": [""], "resources": ["*/status"]},
         Attributes("patch", "", "pods", "status", "ns", "p"), True),
        ({"verbs": ["list"], "apiGroups": ["*"], "resources": ["*"]},
         Attributes("list", "apps", "deployments", namespace="ns"), True),
        ({"verbs": ["list"], "apiGroups": ["apps"], "resources": ["deployments"]},
         Attributes("list", "", "deployments", namespace="ns"), False),
        ({"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
         Attributes("get", "", "secrets", namespace="ns", name="a"), True),
        ({"verbs": ["list"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["a"]},
         Attributes("list", "", "secrets", namespace="ns"), False),
    ],
)  # fmt: skip
def test_rules_match_verb_group_resource_and_name(
    rule: dict[str, Any], request_: Attributes, expected: bool
) -> None:
    rbac = authorizer(roles=[role("r", rule)], rolebindings=[binding("Role", "r")])
    assert allowed(rbac, request_) is expected


def test_a_role_binding_grants_only_in_its_namespace() -> None:
    rule = {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]}
    rbac = authorizer(
        clusterroles=[role("lister", rule, namespace="")],
        rolebindings=[binding("ClusterRole", "lister")],
    )
    assert allowed(rbac, Attributes("list", "", "pods", namespace="ns"))
    assert not allowed(rbac, Attributes("list", "", "pods", namespace="other"))
    assert not allowed(rbac, Attributes("list", "", "pods"))
    everywhere = authorizer(
        clusterroles=[role("lister", rule, namespace="")],
        clusterrolebindings=[binding("ClusterRole", "lister", "", subjects=[
            {**SUBJECT, "namespace": "ns"}])],
    )  # fmt: skip
    assert allowed(everywhere, Attributes("list", "", "pods", namespace="other"))
    assert allowed(everywhere, Attributes("list", "", "pods"))


def test_refusals_word_the_message_as_kubernetes_does() -> None:
    rbac = authorizer(rolebindings=[binding("Role", "missing")])
    with pytest.raises(errors.ApiError) as refused:
        rbac.check(ROBOT, Attributes("watch", "akri.sh", "instances"))
    assert refused.value.status["message"] == (
        'instances.akri.sh is forbidden: User "system:serviceaccount:ns:robot" cannot watch '
        'resource "instances" in API group "akri.sh" at the cluster scope'
    )
    with pytest.raises(errors.ApiError) as refused:
        rbac.check(ROBOT, Attributes("update", "", "pods", "status", "ns", "p"))
    assert refused.value.status["message"] == (
        'pods "p" is forbidden: User "system:serviceaccount:ns:robot" cannot update resource '
        '"pods/status" in API group "" in the namespace "ns": RBAC: '
        'role.rbac.authorization.k8s.io "missing" not found'
    )


def test_the_admin_may_do_anything() -> None:
    authorizer().check(ADMIN, Attributes("delete", "", "nodes", name="n"))


def test_tokens_name_their_account_until_it_goes_or_they_expire() -> None:
    accounts = {("ns", "robot"): "uid-1"}
    now = [1000.0]

    def find(plural: str, ns: str, name: str) -> dict[str, Any] | None:
        uid = accounts.get((ns, name)) if plural == "serviceaccounts" else None
        return None if uid is None else {"metadata": {"uid": uid}}

    issuer = TokenIssuer("admin", find, lambda: now[0])
    token, expires = issuer.issue("ns", "robot", expiration_s=600)
    assert expires == 1600
    robot = issuer.authenticate(f"Bearer {token}")
    assert (robot.name, robot.groups) == (ROBOT.name, ROBOT.groups)
    assert robot.extra_map["authentication.kubernetes.io/credential-id"][0].startswith("JTI=")
    assert issuer.authenticate("Bearer admin") == ADMIN
    accounts[("ns", "robot")] = "uid-2"  # deleted and created again: old tokens are void
    with pytest.raises(errors.ApiError) as refused:
        issuer.authenticate(f"Bearer {token}")
    assert refused.value.code == 401
    fresh, _ = issuer.issue("ns", "robot", expiration_s=600)
    now[0] = 1600
    with pytest.raises(errors.ApiError):
        issuer.authenticate(f"Bearer {fresh}")
    with pytest.raises(errors.ApiError):
        issuer.issue("ns", "nobody")


def test_a_token_bound_to_a_pod_names_its_node_until_the_pod_goes() -> None:
    stored: dict[tuple[str, str, str], dict[str, Any]] = {
        ("serviceaccounts", "ns", "agent"): {"metadata": {"uid": "sa-1"}},
        ("pods", "ns", "agent-x"): {"metadata": {"uid": "pod-1"}, "spec": {"nodeName": "node-a"}},
        ("nodes", "", "node-a"): {"metadata": {"uid": "node-1"}},
    }
    issuer = TokenIssuer("admin", lambda plural, ns, name: stored.get((plural, ns, name)))
    bound = {"kind": "Pod", "apiVersion": "v1", "name": "agent-x", "uid": "pod-1"}
    answer = issuer.token_request("ns", "agent", {"spec": {"boundObjectRef": bound}})
    user = issuer.authenticate(f"Bearer {answer['status']['token']}")
    extra = user.extra_map
    assert extra["authentication.kubernetes.io/node-name"] == ["node-a"]
    assert extra["authentication.kubernetes.io/node-uid"] == ["node-1"]
    assert extra["authentication.kubernetes.io/pod-name"] == ["agent-x"]
    with pytest.raises(errors.ApiError) as mismatch:
        issuer.token_request("ns", "agent", {"spec": {"boundObjectRef": {**bound, "uid": "x"}}})
    assert mismatch.value.code == 409
    del stored[("pods", "ns", "agent-x")]  # the pod is gone: so is its token
    with pytest.raises(errors.ApiError) as refused:
        issuer.authenticate(f"Bearer {answer['status']['token']}")
    assert refused.value.code == 401
    with pytest.raises(errors.ApiError) as missing:
        issuer.token_request("ns", "agent", {"spec": {"boundObjectRef": bound}})
    assert missing.value.code == 404
