"""The soak's user: pods made and deleted, Configurations made and edited, as kubectl would.

A request is retried through the faults the soak injects (throttling, server errors, conflicts,
expired watches, timeouts) until a deadline, and given up at once when the API refuses it for
good (a 400 or a 422 answers the same every time): a refused edit must show, not stall the run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming

log = logging.getLogger(__name__)

NAMESPACE: Final = "default"
DEADLINE_S: Final = 60.0
REQUEST_TIMEOUT_S: Final = 10.0
RETRY_S: Final = 0.5
TRANSIENT: Final = frozenset({409, 410, 429, 500, 503, 504})
"""Statuses worth another try: the faults the soak injects, and conflicts."""
MERGE_PATCH: Final[dict[str, Any]] = {"_content_type": "application/merge-patch+json"}


class User:
    def __init__(self, api: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api)
        self._custom = client.CustomObjectsApi(api)

    async def core(
        self, call: Callable[[client.CoreV1Api], Awaitable[Any]], deadline_s: float = DEADLINE_S
    ) -> bool:
        """False when the request did not go through (a 404 on delete counts as done)."""
        end = time.monotonic() + deadline_s
        while True:
            try:
                async with asyncio.timeout(REQUEST_TIMEOUT_S):
                    await call(self._core)
                return True
            except ApiException as error:
                if error.status == 404 or (error.status == 409 and error.reason == "AlreadyExists"):
                    return True
                if error.status not in TRANSIENT:
                    log.warning("the API refused a request: %s %s", error.status, error.reason)
                    return False
            except (TimeoutError, OSError) as error:
                log.debug("request failed: %r", error)
            if time.monotonic() > end:
                return False
            await asyncio.sleep(RETRY_S)

    async def custom(
        self,
        call: Callable[[client.CustomObjectsApi], Awaitable[Any]],
        deadline_s: float = DEADLINE_S,
    ) -> bool:
        return await self.core(lambda _core: call(self._custom), deadline_s)

    async def create(self, plural: str, body: dict[str, Any]) -> bool:
        """Create an akri object as `kubectl create` does."""
        return await self.custom(
            lambda custom: custom.create_namespaced_custom_object(
                naming.GROUP, naming.VERSION, NAMESPACE, plural, body
            )
        )

    async def set_capacity(self, configuration: str, capacity: int) -> bool:
        """`kubectl patch akric <configuration> --type merge -p '{"spec":{"capacity":N}}'`."""
        patch = {"spec": {"capacity": capacity}}
        return await self.custom(
            lambda custom: custom.patch_namespaced_custom_object(
                naming.GROUP,
                naming.VERSION,
                NAMESPACE,
                "configurations",
                configuration,
                patch,
                **MERGE_PATCH,
            )
        )

    async def create_pod(self, body: Any) -> bool:
        return await self.core(lambda core: core.create_namespaced_pod(NAMESPACE, body))

    async def delete_pod(self, name: str) -> bool:
        return await self.core(
            lambda core: core.delete_namespaced_pod(name, NAMESPACE, grace_period_seconds=0)
        )
