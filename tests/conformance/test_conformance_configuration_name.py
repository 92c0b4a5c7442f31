"""The project's Configuration CRD refuses a name too long for its Instances at admission.

Issue 27: a 60-character Configuration name was accepted and reported only later, by the
agents, as InvalidName. The CRD's rule on metadata.name refuses it on the real API server and
on the emulator alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.api import crd_definitions
from akri.naming import GROUP, MAX_CONFIGURATION_NAME, VERSION
from tests.conformance.conftest import established
from tests.conformance.support import status_body

CRD = next(d for d in crd_definitions() if d["spec"]["names"]["kind"] == "Configuration")


@pytest.fixture
async def configurations(api: client.ApiClient) -> AsyncIterator[client.CustomObjectsApi]:
    """The Configuration CRD, established for the test (left alone when the cluster has it)."""
    extensions = client.ApiextensionsV1Api(api)
    try:
        await extensions.read_custom_resource_definition(CRD["metadata"]["name"])
    except ApiException as error:
        if error.status != 404:
            raise
        async with established(api, CRD):
            yield client.CustomObjectsApi(api)
        return
    yield client.CustomObjectsApi(api)


def configuration(name: str) -> dict[str, object]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Configuration",
        "metadata": {"name": name},
        "spec": {"discoveryHandler": {"name": "debugEcho", "discoveryDetails": ""}},
    }


async def test_a_name_too_long_for_its_instances_is_refused(
    configurations: client.CustomObjectsApi, namespace: str
) -> None:
    longest = "c" * MAX_CONFIGURATION_NAME
    created = await configurations.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "configurations", configuration(longest)
    )
    assert created["metadata"]["name"] == longest

    with pytest.raises(ApiException) as caught:
        await configurations.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "configurations", configuration(longest + "c")
        )

    assert caught.value.status == 422
    status = status_body(caught.value)
    assert status["reason"] == "Invalid"
    (cause,) = status["details"]["causes"]
    assert cause["reason"] == "FieldValueInvalid"
    # The real server words a rule on the object's root as `<nil>: Invalid value: <message>`,
    # the emulator as `: Invalid value: "object": <message>`; both carry the rule's message.
    assert cause["message"].endswith(
        f"a Configuration name is at most {MAX_CONFIGURATION_NAME} characters: its Instances "
        "are named <name>-<6 hex digits> and advertised as akri.sh/<Instance name>, at most 63 "
        "characters"
    )
