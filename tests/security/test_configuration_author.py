"""A namespace user allowed Configurations and nothing else tries to reach the host, another
identity or the device nodes of the host through akri (docs/security.md, "Configuration
authors"). Each attempt is refused by the API server, and nothing is stored."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.security.support import (
    GROUP,
    VERSION,
    Secured,
    absent,
    broker,
    configuration,
    refusal,
)

AUTHOR = "author"
CONFIGURATIONS_ONLY = [{"apiGroups": [GROUP], "resources": ["configurations"], "verbs": ["*"]}]
BROKERS_TOO = [
    *CONFIGURATIONS_ONLY,
    {"apiGroups": [""], "resources": ["pods", "services"], "verbs": ["create"]},
]


@pytest.fixture
async def author(secured: Secured) -> AsyncIterator[client.CustomObjectsApi]:
    """The namespace user: a ServiceAccount whose Role allows Configurations and pods (so the
    broker rules, not missing rights, are what refuses a broker)."""
    await secured.grant(secured.namespace, AUTHOR, BROKERS_TOO)
    token = await secured.account_token(secured.namespace, AUTHOR)
    async with await secured.client_for(token) as api:
        yield client.CustomObjectsApi(api)


async def attempt(
    secured: Secured, custom: client.CustomObjectsApi, body: dict[str, Any]
) -> tuple[int, str]:
    """Create `body` as the author; the refusal, after checking nothing was stored."""
    status, message = await refusal(
        lambda: custom.create_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, "configurations", body
        )
    )
    name = body["metadata"]["name"]
    assert await absent(
        lambda: secured.custom.get_namespaced_custom_object(
            GROUP, VERSION, secured.namespace, "configurations", name
        )
    ), f"the Configuration {name} was stored"
    return status, message


async def test_a_privileged_broker_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    body = configuration(
        "root", brokerSpec=broker(container={"securityContext": {"privileged": True}})
    )
    status, message = await attempt(secured, author, body)
    assert status == 403
    assert "a broker container may not be privileged" in message


async def test_a_host_path_broker_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    body = configuration("disk", brokerSpec=broker(
        volumes=[{"name": "root", "hostPath": {"path": "/"}}],
        container={"volumeMounts": [{"name": "root", "mountPath": "/host"}]},
    ))  # fmt: skip
    status, message = await attempt(secured, author, body)
    assert status == 403
    assert "may not mount hostPath volumes" in message


async def test_a_host_pid_job_broker_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    job = {"template": {"spec": {
        "hostPID": True, "restartPolicy": "Never",
        "containers": [{"name": "broker", "image": "busybox"}],
    }}}  # fmt: skip
    status, message = await attempt(
        secured, author, configuration("pid", brokerSpec={"brokerJobSpec": job})
    )
    assert status == 403
    assert "may not use the host network, PID or IPC namespace" in message


async def test_an_added_capability_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    body = configuration("caps", brokerSpec=broker(
        container={"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}))  # fmt: skip
    status, message = await attempt(secured, author, body)
    assert status == 403
    assert "may not add capabilities" in message


async def test_a_foreign_service_account_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    body = configuration("sa", brokerSpec=broker(serviceAccountName="deployer"))
    status, message = await attempt(secured, author, body)
    assert status == 403, message
    assert "may run only as a service account allowed" in message


async def test_a_udev_rule_outside_the_allowed_subsystems_is_refused(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    body = configuration("disks")
    body["spec"]["discoveryHandler"] = {
        "name": "udev",
        "discoveryDetails": 'udevRules: [\'SUBSYSTEM=="block", KERNEL=="sda"\']',
    }
    status, message = await attempt(secured, author, body)
    assert status == 403
    assert "must match SUBSYSTEM==" in message


async def test_a_broker_its_author_could_not_create_is_refused(secured: Secured) -> None:
    """Allowed Configurations only, the author may not get pods through the controller."""
    await secured.grant(secured.namespace, "writer", CONFIGURATIONS_ONLY)
    token = await secured.account_token(secured.namespace, "writer")
    async with await secured.client_for(token) as api:
        status, message = await attempt(
            secured, client.CustomObjectsApi(api), configuration("pods", brokerSpec=broker())
        )
    assert status == 403
    assert f'"system:serviceaccount:{secured.namespace}:writer" may not create pods' in message


async def test_a_plain_broker_of_an_author_with_pod_rights_is_admitted(
    secured: Secured, author: client.CustomObjectsApi
) -> None:
    """The rules refuse the attacks above, not brokers as such."""
    created = await author.create_namespaced_custom_object(
        GROUP, VERSION, secured.namespace, "configurations",
        configuration("camera", brokerSpec=broker(), instanceServiceSpec={
            "ports": [{"port": 80}]}),
    )  # fmt: skip
    assert created["metadata"]["name"] == "camera"
