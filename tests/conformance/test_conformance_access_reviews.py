"""`kubectl auth can-i`, `kubectl auth whoami`, access reviews and impersonation (`--as`).

The same RBAC decides reviews and requests; impersonating needs the `impersonate` verb.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from tests.conformance.test_conformance_rbac import robot, status_of  # noqa: F401  # a fixture
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

pytestmark = needs_kubectl


def role(name: str, rules: list[dict[str, Any]], cluster_wide: bool = False) -> dict[str, Any]:
    kind = "ClusterRole" if cluster_wide else "Role"
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": {"name": name}, "rules": rules}  # fmt: skip


def binding(
    name: str, role_name: str, subject: dict[str, str], cluster_wide: bool = False
) -> dict[str, Any]:
    kind = "ClusterRoleBinding" if cluster_wide else "RoleBinding"
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole" if cluster_wide else "Role", "name": role_name},
        "subjects": [subject],
    }  # fmt: skip


def user(name: str) -> dict[str, str]:
    return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


def manifest(path: Path, *documents: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(documents))
    return str(path)


async def apply(kubectl: Kubectl, path: Path, *documents: dict[str, Any]) -> None:
    await kubectl("apply", "-f", manifest(path, *documents))


@pytest.fixture
async def reader(kubectl: Kubectl, namespace: str, tmp_path: Path) -> str:
    """A user (named after the namespace) who may list pods in the namespace, and nothing else."""
    name = f"reader-{namespace}"
    await apply(
        kubectl, tmp_path / "reader.yaml",
        role("pod-reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]),
        binding("pod-reader", "pod-reader", user(name)),
    )  # fmt: skip
    return name


async def can_i(kubectl: Kubectl, *args: str) -> str:
    """kubectl auth can-i's answer (it exits 1 for "no")."""
    code, out, err = await kubectl.result("auth", "can-i", *args)
    assert code in (0, 1), err
    return out.strip()


async def test_can_i_answers_for_the_caller_and_for_whom_it_impersonates(
    kubectl: Kubectl, reader: str
) -> None:
    assert await can_i(kubectl, "create", "pods") == "yes"  # the admin
    assert await can_i(kubectl, "list", "pods", "--as", reader) == "yes"
    assert await can_i(kubectl, "delete", "pods", "--as", reader) == "no"
    assert await can_i(kubectl, "list", "pods", "-n", "default", "--as", reader) == "no"
    assert await can_i(kubectl, "list", "secrets", "--as", reader) == "no"


async def test_impersonated_requests_are_authorized_as_that_user_and_group(
    kubectl: Kubectl, namespace: str, reader: str, tmp_path: Path
) -> None:
    await kubectl("get", "pods", "--as", reader)
    refused = await kubectl("get", "secrets", "--as", reader, ok=False)
    assert f'User "{reader}" cannot list resource "secrets"' in refused
    group = f"readers-{namespace}"
    await apply(
        kubectl, tmp_path / "group.yaml",
        role("secret-reader", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]),
        binding("secret-reader", "secret-reader",
                {"kind": "Group", "name": group, "apiGroup": "rbac.authorization.k8s.io"}),
    )  # fmt: skip
    await kubectl("get", "secrets", "--as", "someone", "--as-group", group)
    assert await can_i(kubectl, "list", "secrets", "--as", "x", "--as-group", group) == "yes"
    whoami = json.loads(await kubectl("auth", "whoami", "--as", "x", "--as-group", group,
                                      "-o", "json"))  # fmt: skip
    assert whoami["status"]["userInfo"] == {
        "username": "x",
        "groups": [group, "system:authenticated"],
    }


async def test_impersonation_needs_the_impersonate_verb(
    kubectl: Kubectl,
    robot: client.ApiClient,  # noqa: F811  # the fixture imported above
    namespace: str,
    reader: str,
    tmp_path: Path,
) -> None:
    caller = f"system:serviceaccount:{namespace}:robot"
    robot.set_default_header("Impersonate-User", reader)
    pods = client.CoreV1Api(robot)
    code, message = await status_of(lambda: pods.list_namespaced_pod(namespace))
    assert code == 403
    # 1.36 names the constrained-impersonation verb it tried first (impersonate-on:...)
    assert f'User "{caller}" cannot impersonate' in message
    name = f"impersonate-{namespace}"
    may = [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
            "resourceNames": [reader]}]  # fmt: skip
    subject = {"kind": "ServiceAccount", "name": "robot", "namespace": namespace}
    await apply(
        kubectl, tmp_path / "impersonate.yaml",
        role(name, may, cluster_wide=True), binding(name, name, subject, cluster_wide=True),
    )  # fmt: skip
    try:

        async def allowed() -> bool:  # a real server's RBAC cache catches up within moments
            return await status_of(lambda: pods.list_namespaced_pod(namespace)) == (200, "")

        await eventually(allowed, "the impersonation to be allowed")
        code, message = await status_of(lambda: pods.list_namespaced_secret(namespace))
        assert code == 403
        assert f'User "{reader}" cannot list resource "secrets"' in message
        robot.set_default_header("Impersonate-User", "someone-else")
        code, message = await status_of(lambda: pods.list_namespaced_pod(namespace))
        assert code == 403
        assert f'User "{caller}" cannot impersonate' in message
        del robot.default_headers["Impersonate-User"]
        rules = await client.AuthorizationV1Api(robot).create_self_subject_rules_review(
            client.V1SelfSubjectRulesReview(
                spec=client.V1SelfSubjectRulesReviewSpec(namespace=namespace)
            )
        )
        granted = [(r.verbs, r.resources, r.resource_names) for r in rules.status.resource_rules]
        assert (["impersonate"], ["users"], [reader]) in granted
    finally:
        await kubectl("delete", "clusterrole,clusterrolebinding", name)


async def test_a_subject_access_review_decides_for_the_user_it_names(
    api: client.ApiClient, namespace: str, reader: str
) -> None:
    reviews = client.AuthorizationV1Api(api)

    async def allowed(verb: str, who: str) -> bool:
        review = client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=who,
                resource_attributes=client.V1ResourceAttributes(
                    namespace=namespace, verb=verb, resource="pods"
                ),
            )
        )
        answer = await reviews.create_subject_access_review(review)
        return bool(answer.status.allowed)

    assert await allowed("list", reader)
    assert not await allowed("delete", reader)
    assert not await allowed("list", "nobody-in-particular")
    mine = await reviews.create_self_subject_access_review(
        client.V1SelfSubjectAccessReview(
            spec=client.V1SelfSubjectAccessReviewSpec(
                non_resource_attributes=client.V1NonResourceAttributes(path="/healthz", verb="get")
            )
        )
    )
    assert mine.status.allowed
