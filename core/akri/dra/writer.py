"""Bring a pool's ResourceSlices, and a DeviceClass, to what `akri.dra` decided.

A sync lists the slices of the pool's writer (one node's, or the cluster-wide ones), plans
(`akri.dra.slices.plan`) and writes the difference: updates carry the resourceVersion they were
based on and deletes precondition on it, so a concurrent writer or a stale view gives 409 and
the sync lists and plans again. Nothing is written when the API already holds the pool.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.dra.devices import DRIVER
from akri.dra.slices import Plan, Pool, plan

log = logging.getLogger(__name__)

JSON = dict[str, Any]
GROUP, VERSION = "resource.k8s.io", "v1"
SLICES, CLASSES = "resourceslices", "deviceclasses"
_RETRY = (409, 404)
ATTEMPTS = 10


class SliceWriter:
    """Writes the pools of one writer: `node` for local pools, None for shared pools."""

    def __init__(self, api_client: client.ApiClient, node: str | None) -> None:
        self._api = client.CustomObjectsApi(api_client)
        self._node = node
        self.writes = 0
        """API writes made so far (what the benchmark and tests count)."""

    async def stored(self) -> dict[str, list[JSON]]:
        """This writer's slices in the API, by pool name."""
        selector = f"spec.driver={DRIVER},spec.nodeName={self._node or ''}"
        listed = await self._api.list_cluster_custom_object(
            GROUP, VERSION, SLICES, field_selector=selector
        )
        pools: dict[str, list[JSON]] = {}
        for item in listed.get("items") or []:
            pools.setdefault(item["spec"]["pool"]["name"], []).append(item)
        return pools

    async def sync(self, pools: Iterable[Pool], *, remove_others: bool = False) -> bool:
        """Write `pools`; with `remove_others`, delete every other pool of this writer.

        Returns whether anything was written. Raises ApiException when the API keeps refusing.
        """
        wanted = {pool.name: pool for pool in pools}
        backoff = Backoff(initial=0.01, maximum=1.0)
        for attempt in range(ATTEMPTS):
            stored = await self.stored()
            names = set(wanted) | (set(stored) if remove_others else set())
            plans = [
                plan(wanted.get(name) or Pool(name, self._node, []), stored.get(name, []))
                for name in sorted(names)
            ]
            try:
                return any([await self._apply(p) for p in plans if p])
            except ApiException as error:
                if error.status not in _RETRY or attempt == ATTEMPTS - 1:
                    raise
                await asyncio.sleep(backoff.next_delay())
        raise AssertionError("unreachable")

    async def _apply(self, writes: Plan) -> bool:
        for name, version in writes.deletes:
            try:
                await self._api.delete_cluster_custom_object(
                    GROUP, VERSION, SLICES, name, body=_precondition(version)
                )
            except ApiException as error:
                if error.status != 404:  # already gone is what we wanted
                    raise
            self.writes += 1
        for item in writes.updates:
            name = item["metadata"]["name"]
            await self._api.replace_cluster_custom_object(GROUP, VERSION, SLICES, name, item)
            self.writes += 1
        for item in writes.creates:
            await self._api.create_cluster_custom_object(GROUP, VERSION, SLICES, item)
            self.writes += 1
        return True


async def apply_device_class(api_client: client.ApiClient, desired: JSON) -> bool:
    """Create or replace a DeviceClass when it differs from `desired`; whether it wrote."""
    api = client.CustomObjectsApi(api_client)
    name = desired["metadata"]["name"]
    try:
        current = await api.get_cluster_custom_object(GROUP, VERSION, CLASSES, name)
    except ApiException as error:
        if error.status != 404:
            raise
        await api.create_cluster_custom_object(GROUP, VERSION, CLASSES, desired)
        return True
    labels = current["metadata"].get("labels") or {}
    if current.get("spec") == desired["spec"] and labels == desired["metadata"]["labels"]:
        return False
    body = {**desired, "metadata": {**desired["metadata"], **_version(current)}}
    await api.replace_cluster_custom_object(GROUP, VERSION, CLASSES, name, body)
    return True


async def delete_device_classes(
    api_client: client.ApiClient, label_selector: str, keep: set[str]
) -> int:
    """Delete the DeviceClasses matching `label_selector` whose name is not in `keep`."""
    api = client.CustomObjectsApi(api_client)
    listed = await api.list_cluster_custom_object(
        GROUP, VERSION, CLASSES, label_selector=label_selector
    )
    deleted = 0
    for item in listed.get("items") or []:
        name = item["metadata"]["name"]
        if name in keep:
            continue
        body = _precondition(item["metadata"]["resourceVersion"])
        try:
            await api.delete_cluster_custom_object(GROUP, VERSION, CLASSES, name, body=body)
            deleted += 1
        except ApiException as error:
            if error.status not in _RETRY:
                raise
    return deleted


def _version(obj: JSON) -> JSON:
    return {"resourceVersion": obj["metadata"]["resourceVersion"]}


def _precondition(resource_version: str) -> client.V1DeleteOptions:
    """Delete only the version a decision was based on."""
    return client.V1DeleteOptions(
        preconditions=client.V1Preconditions(resource_version=resource_version)
    )
