"""Read the Secrets and ConfigMaps that discoveryProperties name, then resolve them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.api import DiscoveryProperty
from akri.discovery.model import InvalidProperties
from akri.discovery.properties import (
    Source,
    Values,
    config_map_values,
    resolve,
    secret_values,
    sources,
)

HTTP_NOT_FOUND = 404

Reader = Callable[[Source], Awaitable[Values | None]]
"""Reads one source; None when it does not exist."""


def kube_reader(api_client: client.ApiClient) -> Reader:
    """A Reader over the API server's core/v1 Secrets and ConfigMaps.

    The core/v1 API class is made at the first read: its module is 3 MB, and most agents
    never read a Secret (kubernetes-asyncio loads on first use, `akri.kube.lean`).
    """

    async def read(source: Source) -> Values | None:
        core_v1 = client.CoreV1Api(api_client)
        try:
            if source.kind == "Secret":
                secret = await core_v1.read_namespaced_secret(source.name, source.namespace)
                return secret_values(source, secret.data)
            config_map = await core_v1.read_namespaced_config_map(source.name, source.namespace)
            return config_map_values(source, config_map.data, config_map.binary_data)
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return None
            raise InvalidProperties(
                f"cannot read {source}: {error.status} {error.reason}"
            ) from None

    return read


async def resolve_properties(
    properties: Iterable[DiscoveryProperty], namespace: str, read: Reader
) -> dict[str, bytes]:
    """The handler's properties of a Configuration in `namespace`; InvalidProperties if unusable."""
    wanted = list(properties)
    objects = {source: await read(source) for source in sources(wanted, namespace)}
    return resolve(wanted, namespace, objects)
