"""Service-account tokens and RBAC: refused with the real 403 message until a role grants it.

Runs unchanged against a real API server; the emulator runs with authorization on (the admin
kubeconfig stays all-powerful, so the rest of the suite is unaffected).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from tests.conformance.support import Cluster, status_body
from tests.support import eventually


async def status_of(call: Callable[[], Awaitable[Any]]) -> tuple[int, str]:
    """The HTTP status of a call and, when refused, its Status message."""
    try:
        await call()
    except ApiException as error:
        return error.status, status_body(error).get("message", "")
    return 200, ""


@pytest.fixture
async def robot(
    cluster: Cluster, core: client.CoreV1Api, namespace: str
) -> AsyncIterator[client.ApiClient]:
    """A client that authenticates as the ServiceAccount `robot`, by a TokenRequest token."""
    await core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="robot"))
    )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    issued = await core.create_namespaced_service_account_token("robot", namespace, request)
    assert issued.status.token
    admin = client.Configuration()
    await config.load_kube_config(str(cluster.kubeconfig), client_configuration=admin)
    robot_config = copy.copy(admin)
    robot_config.cert_file = robot_config.key_file = None  # the token alone says who calls
    robot_config.api_key = {"BearerToken": f"Bearer {issued.status.token}"}
    robot_config.refresh_api_key_hook = None
    async with client.ApiClient(robot_config) as api_client:
        yield api_client


def forbidden(namespace: str, what: str, verb: str, resource: str, group: str = "") -> str:
    return (
        f'{what} is forbidden: User "system:serviceaccount:{namespace}:robot" cannot {verb} '
        f'resource "{resource}" in API group "{group}" in the namespace "{namespace}"'
    )


async def test_a_service_account_may_do_what_its_role_grants(
    api: client.ApiClient, robot: client.ApiClient, namespace: str
) -> None:
    core, robot_core = client.CoreV1Api(api), client.CoreV1Api(robot)
    robot_apps = client.AppsV1Api(robot)
    await core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="settings"))
    )
    assert await status_of(lambda: robot_core.list_namespaced_config_map(namespace)) == (
        403, forbidden(namespace, "configmaps", "list", "configmaps")
    )  # fmt: skip
    assert await status_of(
        lambda: robot_core.read_namespaced_config_map("settings", namespace)
    ) == (403, forbidden(namespace, 'configmaps "settings"', "get", "configmaps"))
    assert await status_of(lambda: robot_apps.list_namespaced_deployment(namespace)) == (
        403, forbidden(namespace, "deployments.apps", "list", "deployments", "apps")
    )  # fmt: skip

    rbac = client.RbacAuthorizationV1Api(api)
    rules = [
        client.V1PolicyRule(api_groups=[""], resources=["configmaps"], verbs=["list"]),
        client.V1PolicyRule(
            api_groups=[""], resources=["configmaps"], verbs=["get"], resource_names=["settings"]
        ),
        client.V1PolicyRule(api_groups=[""], resources=["pods/status"], verbs=["get"]),
    ]
    await rbac.create_namespaced_role(
        namespace, client.V1Role(metadata=client.V1ObjectMeta(name="reader"), rules=rules)
    )
    await rbac.create_namespaced_role_binding(
        namespace,
        client.V1RoleBinding(
            metadata=client.V1ObjectMeta(name="robot-reads"),
            role_ref=client.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name="reader"
            ),
            subjects=[client.RbacV1Subject(kind="ServiceAccount", name="robot")],
        ),
    )

    async def listed() -> bool:
        return (await status_of(lambda: robot_core.list_namespaced_config_map(namespace)))[0] == 200

    await eventually(listed, "the role binding to take effect")
    assert (await robot_core.read_namespaced_config_map("settings", namespace)).metadata.name == (
        "settings"
    )
    assert await status_of(lambda: robot_core.read_namespaced_config_map("other", namespace)) == (
        403, forbidden(namespace, 'configmaps "other"', "get", "configmaps")
    )  # fmt: skip
    assert await status_of(
        lambda: robot_core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="new"))
        )
    ) == (403, forbidden(namespace, "configmaps", "create", "configmaps"))
    # A subresource is its own resource: pods/status does not grant pods.
    assert await status_of(lambda: robot_core.read_namespaced_pod("p", namespace)) == (
        403, forbidden(namespace, 'pods "p"', "get", "pods")
    )  # fmt: skip


async def test_an_unknown_token_is_refused(cluster: Cluster, namespace: str) -> None:
    admin = client.Configuration()
    await config.load_kube_config(str(cluster.kubeconfig), client_configuration=admin)
    url = f"{admin.host}/api/v1/namespaces/{namespace}/configmaps"
    headers = {"Authorization": "Bearer not-a-token-of-this-cluster"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=False) as response,
    ):
        assert response.status == 401


@pytest.mark.emulator_only
async def test_the_access_log_lists_what_each_caller_did(
    cluster: Cluster, robot: client.ApiClient, namespace: str
) -> None:
    await status_of(lambda: client.CoreV1Api(robot).list_namespaced_config_map(namespace))
    user = f"system:serviceaccount:{namespace}:robot"
    url = f"{cluster.emulator.url}/_sim/access"
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, params={"user": user}) as response,
    ):
        entries = await response.json()
    assert entries == [
        {"user": user, "verb": "list", "group": "", "resource": "configmaps", "subresource": "",
         "namespace": namespace, "name": "", "allowed": False}
    ]  # fmt: skip
