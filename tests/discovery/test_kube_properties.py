"""discoveryProperties read from Secrets and ConfigMaps of the emulated API server."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client, config

from akri.agent.discovery.kube_properties import kube_reader, resolve_properties
from akri.api import DiscoveryProperty
from akri.discovery.model import InvalidProperties
from akri.sim.apiserver import ApiServer

NS = "default"


@pytest.fixture
async def apiserver() -> AsyncIterator[ApiServer]:
    async with ApiServer() as server:
        yield server


@pytest.fixture
async def seeded(apiserver: ApiServer, tmp_path: Path) -> AsyncIterator[client.ApiClient]:
    """A client of a server holding the Secrets and ConfigMaps the tests read."""
    kubeconfig = apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    api = await config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
    async with api:
        core = client.CoreV1Api(api)
        await core.create_namespaced_secret(
            NS,
            client.V1Secret(
                metadata=meta("creds"), data={"password": base64.b64encode(b"s3cr\x00t").decode()}
            ),
        )
        await core.create_namespaced_config_map(
            NS,
            client.V1ConfigMap(
                metadata=meta("settings"),
                data={"mode": "fast"},
                binary_data={"blob": base64.b64encode(b"\xff\x01").decode()},
            ),
        )
        yield api


def meta(name: str) -> client.V1ObjectMeta:
    return client.V1ObjectMeta(name=name)


def prop(name: str, **spec: Any) -> DiscoveryProperty:
    return DiscoveryProperty.model_validate({"name": name, **spec})


def ref(kind: str, name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"valueFrom": {kind: {"name": name, "key": key, **extra}}}


async def test_values_secrets_and_config_maps(seeded: client.ApiClient) -> None:
    props = [
        prop("LITERAL", value="x"),
        prop("PASSWORD", **ref("secretKeyRef", "creds", "password")),
        prop("MODE", **ref("configMapKeyRef", "settings", "mode", namespace=NS)),  # its own
        prop("BLOB", **ref("configMapKeyRef", "settings", "blob")),
        prop("OPT", **ref("configMapKeyRef", "absent", "k", optional=True)),
    ]
    assert await resolve_properties(props, NS, kube_reader(seeded)) == {
        "LITERAL": b"x",
        "PASSWORD": b"s3cr\x00t",
        "MODE": b"fast",
        "BLOB": b"\xff\x01",
    }


async def test_missing_object_names_property_and_source(seeded: client.ApiClient) -> None:
    props = [prop("MODE", **ref("configMapKeyRef", "absent", "mode"))]
    with pytest.raises(InvalidProperties, match="'MODE': ConfigMap default/absent not found"):
        await resolve_properties(props, NS, kube_reader(seeded))


async def test_unreadable_object_is_an_error_not_a_skip(
    apiserver: ApiServer, seeded: client.ApiClient
) -> None:
    apiserver.faults.add(verb="get", resource="secrets", status=403, count=1)
    props = [prop("P", **ref("secretKeyRef", "creds", "password", optional=True))]
    with pytest.raises(InvalidProperties, match="cannot read Secret default/creds: 403"):
        await resolve_properties(props, NS, kube_reader(seeded))
