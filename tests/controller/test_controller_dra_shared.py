"""The controller's shared-pool ResourceSlice as written for the nodes of a real cluster."""

from __future__ import annotations

import dataclasses

from kubernetes_asyncio import client

from akri.dra.mode import Mode
from tests.controller.conftest import (
    FAST,
    configuration_body,
    create_configuration,
    create_instance,
    ready_node,
    running,
    shared_slices,
)
from tests.support import eventually, selected_nodes


async def test_shared_devices_select_nodes_by_their_hostname_label(api: client.ApiClient) -> None:
    """A node whose kubelet runs under another hostname is selected by its label's value."""
    await ready_node(api, "node-0")
    await ready_node(api, "node-1")
    labels = {"metadata": {"labels": {"kubernetes.io/hostname": "edge-0.example"}}}
    await client.CoreV1Api(api).patch_node("node-0", labels)
    configuration = await create_configuration(api, configuration_body("cam"))
    await create_instance(api, configuration, "dev0", ["node-0", "node-1"])

    async with running(api, dataclasses.replace(FAST, mode=Mode.DRA)):

        async def published() -> list[str] | None:
            found = await shared_slices(api)
            devices = [d for s in found for d in s["spec"]["devices"]]
            return selected_nodes(devices[0]) if devices else None

        assert await eventually(published, "the shared slice") == ["edge-0.example", "node-1"]
