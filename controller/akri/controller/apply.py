"""`akri apply`: create or update Configurations once the API server can admit them.

The chart's example Configurations go through the admission webhook like any other, and the
webhook fails closed (`failurePolicy: Fail`): created together with the controller that serves
it, they would be refused before it serves. A post-install hook runs this instead: it retries
while the webhook cannot be called (the API server answers 500 "failed calling webhook", or is
not reachable), and stops at the first real refusal, whose reason it reports.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.configurations import CONFIGURATIONS
from akri.kube.calls import call, error_message

log = logging.getLogger(__name__)

HTTP_CONFLICT = 409
PAUSE_S = 1.0
# Answers that mean "not yet": the webhook is not served yet, or the API is busy.
_NOT_YET = {429, 500, 502, 503, 504}


def not_admitted_yet(error: ApiException) -> bool:
    """Whether `error` says the write could not be judged yet (try again), not that it was
    judged and refused."""
    if error.status not in _NOT_YET:
        return False
    return error.status != 500 or "failed calling webhook" in error_message(error)


async def apply(
    api: client.ApiClient,
    documents: Iterable[dict[str, Any]],
    timeout_s: float,
    default_namespace: str = "default",
    pause_s: float = PAUSE_S,
) -> list[str]:
    """Create or update each Configuration; namespace/name of each applied. Raises the first
    refusal, or the last "not yet" once `timeout_s` has passed."""
    custom = client.CustomObjectsApi(api)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    applied = []
    for document in documents:
        namespace = document.get("metadata", {}).get("namespace") or default_namespace
        while True:
            try:
                await _create_or_update(custom, namespace, document)
                break
            except ApiException as error:
                if not not_admitted_yet(error) or loop.time() >= deadline:
                    raise
                log.info("not admitted yet, trying again: %s", error_message(error))
            except (aiohttp.ClientError, TimeoutError) as error:
                if loop.time() >= deadline:
                    raise
                log.info("API not reachable yet, trying again: %s", error)
            await asyncio.sleep(pause_s)
        applied.append(f"{namespace}/{document['metadata']['name']}")
    return applied


async def _create_or_update(
    custom: client.CustomObjectsApi, namespace: str, document: dict[str, Any]
) -> None:
    group, version, plural = CONFIGURATIONS.group, CONFIGURATIONS.version, CONFIGURATIONS.plural
    try:
        await call(custom.create_namespaced_custom_object, group, version, namespace, plural,
                   document)  # fmt: skip
        return
    except ApiException as error:
        if error.status != HTTP_CONFLICT:
            raise
    name = document["metadata"]["name"]
    current = await call(
        custom.get_namespaced_custom_object, group, version, namespace, plural, name
    )
    metadata = {**document["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}
    await call(
        custom.replace_namespaced_custom_object, group, version, namespace, plural, name,
        {**document, "metadata": metadata},
    )  # fmt: skip
