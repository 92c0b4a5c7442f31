"""Which allocation mode a component runs in: `device-plugin`, `dra`, or `auto` (AKRI_MODE).

`auto` picks DRA when the API server serves `resource.k8s.io/v1` ResourceSlices and, for an
agent, the kubelet offers plugin registration (its `plugins_registry` directory exists);
device plugins otherwise, so one chart works on clusters with and without DRA.
"""

from __future__ import annotations

import asyncio
import logging
from enum import StrEnum
from pathlib import Path

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

log = logging.getLogger(__name__)


class Mode(StrEnum):
    DEVICE_PLUGIN = "device-plugin"
    DRA = "dra"
    AUTO = "auto"


async def api_serves_dra(api_client: client.ApiClient) -> bool:
    """Whether the API server serves ResourceSlices in `resource.k8s.io/v1`."""
    try:
        listing = await client.CustomObjectsApi(api_client).get_api_resources(
            "resource.k8s.io", "v1"
        )
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return any(r.name == "resourceslices" for r in listing.resources or [])


async def resolve(
    mode: Mode, api_client: client.ApiClient, plugins_registry: Path | None = None
) -> Mode:
    """`mode` itself unless it is `auto`; then DRA or device plugins as the cluster allows.

    `plugins_registry`: the kubelet's registration directory (agents); None for the controller.
    """
    if mode is not Mode.AUTO:
        return mode
    kubelet_ok = plugins_registry is None or await asyncio.to_thread(plugins_registry.is_dir)
    chosen = Mode.DRA if kubelet_ok and await api_serves_dra(api_client) else Mode.DEVICE_PLUGIN
    log.info("mode auto: running in %s mode", chosen)
    return chosen
