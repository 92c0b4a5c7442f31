"""Attack: a Configuration in one namespace names a Secret (or ConfigMap) of another.

The agent may read Secrets of every namespace, so a namespace user who may write Configurations
could have any of them sent to a discovery handler. Against the API emulator with a real agent:
the kube-system Secret is never read nor sent, the Configuration's condition says why in words
that do not tell whether the Secret exists, and the webhook refuses the same Configuration.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.api import DiscoveryProperty, PropertySource
from akri.api.configuration import KeySelector
from akri.controller.admission import review
from akri.discovery.model import Device
from tests.agent.running_agents import NAMESPACE, Api, configuration, running_agent
from tests.support import eventually

SECRET = "kube-system-token-Zx81"
STOLEN = "stolen"

# An attack on the node: made against the emulator even when a real cluster is given.
pytestmark = pytest.mark.node_side


class Recorder:
    """An embedded handler that keeps every property set it is started with."""

    name = "recorder"
    shared = True

    def __init__(self) -> None:
        self.received: list[Mapping[str, bytes]] = []

    async def discover(
        self, details: str, properties: Mapping[str, bytes]
    ) -> AsyncGenerator[list[Device], None]:
        self.received.append(dict(properties))
        yield []
        await asyncio.Event().wait()


def secret_property(name: str, namespace: str | None) -> DiscoveryProperty:
    selector = KeySelector(name=name, key="token", namespace=namespace)
    return DiscoveryProperty(name="token", value_from=PropertySource(secret_key_ref=selector))


async def test_a_kube_system_secret_is_neither_read_nor_sent(
    api: client.ApiClient, socket_dir: Path
) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_secret(
        "kube-system",
        client.V1Secret(metadata=client.V1ObjectMeta(name=STOLEN), string_data={"token": SECRET}),
    )
    await core.create_namespaced_secret(
        NAMESPACE,
        client.V1Secret(metadata=client.V1ObjectMeta(name="own"), string_data={"token": "mine"}),
    )
    recorder = Recorder()
    k = Api(api)
    async with running_agent(api, socket_dir, "node-a", handlers=[recorder]):
        for name, prop in [
            ("steal", secret_property(STOLEN, "kube-system")),
            ("probe", secret_property("no-such-secret", "kube-system")),
            ("own", secret_property("own", NAMESPACE)),  # naming its own namespace is fine
        ]:
            await k.apply(configuration(name, handler="recorder", details="", properties=[prop]))
        refusals = [
            await eventually(partial(k.condition, name, "InvalidProperties"), f"{name} refused")
            for name in ("steal", "probe")
        ]
        await eventually(lambda: {b"mine"} == {p["token"] for p in recorder.received}, "own")
    assert [c["status"] for c in refusals] == ["True", "True"]
    # The same words whether the Secret exists or not: nothing to learn by probing.
    assert refusals[0]["message"] == refusals[1]["message"]
    assert "namespace 'kube-system' refused" in refusals[0]["message"]
    assert all(SECRET.encode() not in p.values() for p in recorder.received)


def admission(spec_properties: list[dict[str, Any]], namespace: str) -> dict[str, Any]:
    obj = {
        "apiVersion": "akri.sh/v0",
        "kind": "Configuration",
        "metadata": {"name": "c", "namespace": namespace},
        "spec": {"discoveryHandler": {"name": "opcua", "discoveryProperties": spec_properties}},
    }
    request = {"uid": "u", "operation": "CREATE", "namespace": namespace, "object": obj}
    response: dict[str, Any] = review({"apiVersion": "admission.k8s.io/v1", "request": request})[
        "response"
    ]
    return response


@pytest.mark.parametrize("reference", ["secretKeyRef", "configMapKeyRef"])
def test_the_webhook_refuses_another_namespace_in_the_agents_words(reference: str) -> None:
    foreign = {"name": "p", "valueFrom": {reference: {"name": "x", "key": "k", "namespace": "b"}}}
    own = {"name": "p", "valueFrom": {reference: {"name": "x", "key": "k", "namespace": "a"}}}
    implicit = {"name": "p", "valueFrom": {reference: {"name": "x", "key": "k"}}}
    refused = admission([foreign], "a")
    assert refused["allowed"] is False
    kind = "Secret" if reference == "secretKeyRef" else "ConfigMap"
    assert refused["status"]["message"] == (
        f"spec.discoveryHandler.discoveryProperties: discovery property 'p': a {kind} of "
        "namespace 'b' refused: a Configuration reads those of its own namespace ('a') only"
    )
    assert admission([own], "a")["allowed"] is True
    assert admission([implicit], "a")["allowed"] is True
