"""`akri cleanup`: what `helm uninstall` runs before it deletes anything (the chart's pre-delete
hook), so nothing of akri outlives the release.

Deleting the Configurations lets the agents and the controller, still running, take
everything down the normal way: the controller deletes the brokers, the agents free the slots
and with the last slot the Instance's finalizer (`akri.sh/slots-in-use`) goes. Only when
that has not finished within the timeout (an agent that is gone or stuck) is the finalizer
removed here, as a last resort, so an uninstall never hangs on an Instance no program is left
to release; the brokers then go with their Instances (owner references).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.api import Configuration, Instance
from akri.kube.calls import call

log = logging.getLogger(__name__)

BROKERS = f"{naming.LABEL_CONTROLLER}={naming.CONTROLLER_LABEL_VALUE}"
HTTP_NOT_FOUND, HTTP_CONFLICT = 404, 409
RELEASE_ATTEMPTS = 10
Lister = Callable[[], Awaitable[dict[str, Any]]]


@dataclass
class Outcome:
    deleted: list[str] = field(default_factory=list)
    """Configurations deleted (namespace/name)."""
    forced: list[str] = field(default_factory=list)
    """Instances whose finalizer was removed here, after the timeout (namespace/name)."""


class Cleanup:
    """The akri objects of one namespace (None: all namespaces), taken down in order."""

    def __init__(self, api_client: client.ApiClient, namespace: str | None) -> None:
        self._custom = client.CustomObjectsApi(api_client)
        core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
        self._configurations = self._custom_lister(namespace, Configuration.plural)
        self._instances = self._custom_lister(namespace, Instance.plural)
        if namespace is None:
            pods, jobs = core.list_pod_for_all_namespaces, batch.list_job_for_all_namespaces
        else:
            pods = functools.partial(core.list_namespaced_pod, namespace)
            jobs = functools.partial(batch.list_namespaced_job, namespace)
        self._brokers = [
            functools.partial(call, pods, label_selector=BROKERS),
            functools.partial(call, jobs, label_selector=BROKERS),
        ]

    def _custom_lister(self, namespace: str | None, plural: str) -> Lister:
        if namespace is None:
            method = functools.partial(
                self._custom.list_cluster_custom_object, naming.GROUP, naming.VERSION, plural
            )
        else:
            method = functools.partial(
                self._custom.list_namespaced_custom_object,
                naming.GROUP,
                naming.VERSION,
                namespace,
                plural,
            )
        return functools.partial(call, method)

    async def run(self, grace: float, poll: float = 1.0) -> Outcome:
        """Delete the Configurations; after `grace` seconds release the Instances left."""
        outcome = Outcome()
        for obj in (await self._configurations())["items"]:
            namespace, name = obj["metadata"]["namespace"], obj["metadata"]["name"]
            await self._ignore_gone(
                self._custom.delete_namespaced_custom_object,
                naming.GROUP, naming.VERSION, namespace, Configuration.plural, name,
            )  # fmt: skip
            outcome.deleted.append(f"{namespace}/{name}")
        log.info("%d Configurations deleted; waiting for brokers, Instances", len(outcome.deleted))
        try:
            async with asyncio.timeout(grace):
                await self._all_gone(poll)
        except TimeoutError:
            outcome.forced = await self._release_instances()
        return outcome

    async def _all_gone(self, poll: float) -> None:
        # Polled: three kinds, in one or all namespaces, for a minute or two at most.
        while await self._left():  # noqa: ASYNC110
            await asyncio.sleep(poll)

    async def _left(self) -> int:
        """Instances and brokers still there."""
        counts = [len((await self._instances())["items"])]
        counts += [len((await lister())["items"]) for lister in self._brokers]
        return sum(counts)

    async def _release_instances(self) -> list[str]:
        """Remove the slots finalizer from every Instance left, each write guarded by the
        version read; one that changed meanwhile is read and released again."""
        forced: list[str] = []
        for _ in range(RELEASE_ATTEMPTS):
            if not await self._release_round(forced):
                return forced
        raise RuntimeError(f"Instances kept changing; finalizers removed from {forced}")

    async def _release_round(self, forced: list[str]) -> int:
        """One pass over the Instances left; how many changed under it."""
        conflicts = 0
        for obj in (await self._instances())["items"]:
            meta = obj["metadata"]
            finalizers = meta.get("finalizers") or []
            if naming.SLOTS_FINALIZER not in finalizers:
                continue
            patch = {
                "metadata": {
                    "resourceVersion": meta["resourceVersion"],
                    "finalizers": [f for f in finalizers if f != naming.SLOTS_FINALIZER],
                }
            }
            try:
                await self._ignore_gone(
                    self._custom.patch_namespaced_custom_object,
                    naming.GROUP, naming.VERSION, meta["namespace"], Instance.plural,
                    meta["name"], patch, _content_type="application/merge-patch+json",
                )  # fmt: skip
            except ApiException as error:
                if error.status != HTTP_CONFLICT:
                    raise
                conflicts += 1
                continue
            log.warning(
                "Instance %s/%s still held slots after the timeout: its finalizer %s removed",
                meta["namespace"], meta["name"], naming.SLOTS_FINALIZER,
            )  # fmt: skip
            forced.append(f"{meta['namespace']}/{meta['name']}")
        return conflicts

    @staticmethod
    async def _ignore_gone(
        method: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any
    ) -> None:
        try:
            await call(method, *args, **kwargs)
        except ApiException as error:
            if error.status != HTTP_NOT_FOUND:
                raise
