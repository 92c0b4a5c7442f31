"""The simulator's scheduler: binds Pending Pods to nodes through the `pods/binding` API.

It follows Pods and Nodes with reflectors and runs a scheduling pass whenever either changes
(a node's device capacity appears, a pod ends), never on a timer. Pods it has bound but not yet
seen bound are remembered ("assumed"), as the real scheduler does, so two Pods are never placed
on the last free device of a node in one pass. A Pod that fits nowhere stays Pending with a
`FailedScheduling` event, written again only when the reason changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from datetime import UTC, datetime
from typing import cast

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.dra.mode import api_serves_dra
from akri.kube.calls import describe
from akri.kube.events import record_event
from akri.kube.reflector import Object, Reflector
from akri.logs import OnceLog
from akri.sim import scheduling
from akri.sim.dra_scheduling import (
    GROUP,
    POD_CLAIM_NAME_ANNOTATION,
    VERSION,
    DynamicResources,
    NodePlan,
    TemplateClaims,
    release,
    template_claims,
)

log = logging.getLogger(__name__)

SCHEDULER_NAME = "default-scheduler"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Scheduler:
    def __init__(self, api_client: client.ApiClient) -> None:
        self._core = client.CoreV1Api(api_client)
        self._wake = asyncio.Event()
        self._pods = Reflector(self._core.list_pod_for_all_namespaces, self._changed)
        self._nodes = Reflector(self._core.list_node, self._changed)
        self._api_client = api_client
        self._dra: DynamicResources | None = None  # when the API serves resource.k8s.io/v1
        self._assumed: dict[str, str] = {}  # pod uid -> node, until the watch shows the bind
        self._reported: dict[str, str] = {}  # pod uid -> last FailedScheduling message
        self._warn_once = OnceLog(log)

    async def run(self) -> None:
        reflectors = [self._pods, self._nodes]
        if await api_serves_dra(self._api_client):
            self._dra = DynamicResources(self._api_client, self._changed)
            reflectors += self._dra.reflectors()
        async with asyncio.TaskGroup() as tasks:
            for reflector in reflectors:
                tasks.create_task(reflector.run())
            for reflector in reflectors:
                await reflector.synced.wait()
            while True:
                await self._wake.wait()
                self._wake.clear()
                try:
                    await self.schedule_pending()
                except Exception:  # the next change tries again; a scheduler never stops
                    log.exception("scheduling pass failed")

    async def _changed(self, _kind: str, _obj: Object) -> None:
        self._wake.set()

    def _pending(self) -> list[Object]:
        pods = []
        for pod in self._pods.objects.values():
            spec, metadata = pod.get("spec") or {}, pod["metadata"]
            if spec.get("nodeName"):
                self._assumed.pop(metadata["uid"], None)
                self._reported.pop(metadata["uid"], None)
            elif (
                not metadata.get("deletionTimestamp")
                and spec.get("schedulerName", SCHEDULER_NAME) == SCHEDULER_NAME
                and (pod.get("status") or {}).get("phase", "Pending") == "Pending"
                and metadata["uid"] not in self._assumed
            ):
                pods.append(pod)
        return sorted(pods, key=lambda p: str(p["metadata"].get("creationTimestamp", "")))

    async def schedule_pending(self) -> None:
        """One pass: place every Pending pod that fits, oldest first."""
        pending = self._pending()  # also forgets assumptions the watch has confirmed
        pods = {
            pod["metadata"]["uid"]: pod
            for pod in self._pods.objects.values()
            if self._readable(pod)
        }
        self._assumed = {uid: node for uid, node in self._assumed.items() if uid in pods}
        used = scheduling.requested_on_nodes(pods.values())
        spread = scheduling.controllers_on_nodes(pods.values())
        for uid, node in self._assumed.items():
            self._place(pods[uid], node, used, spread)
        if self._dra is not None:
            await self._release_claims()
            await self._claims_from_templates()
        for pod in pending:
            if pod["metadata"]["uid"] not in pods:
                continue
            check = None if self._dra is None else _PodClaims(self._dra)
            try:
                decision = scheduling.choose_node(
                    pod, self._nodes.objects.values(), used, check, spread
                )
            except Exception:
                self._unreadable(pod)
                continue
            if decision.node is None:
                await self._report_unschedulable(pod, decision.message)
            elif await self._reserve(pod, decision.node, check) and await self._bind(
                pod, decision.node
            ):
                self._assumed[pod["metadata"]["uid"]] = decision.node
                self._place(pod, decision.node, used, spread)

    @staticmethod
    def _place(
        pod: Object, node: str, used: dict[str, Counter[str]], spread: dict[str, Counter[str]]
    ) -> None:
        """Count a pod bound in this pass (or bound before, not yet seen bound) on `node`."""
        used.setdefault(node, Counter()).update(scheduling.pod_requests(pod))
        if (owner := scheduling.controller_uid(pod)) is not None:
            spread.setdefault(node, Counter())[owner] += 1

    def _readable(self, pod: Object) -> bool:
        """Whether the pod's requests can be read; one that cannot is left Pending, logged once.

        The API server checks quantities, but not every field of a Pod (nor does its emulator);
        one odd object must not stop every other pod from being scheduled.
        """
        try:
            scheduling.pod_requests(pod)
        except Exception:
            self._unreadable(pod)
            return False
        return True

    def _unreadable(self, pod: Object) -> None:
        metadata = pod["metadata"]
        self._warn_once(
            f"cannot schedule {metadata.get('namespace')}/{metadata.get('name')}: its spec "
            "cannot be read; it stays Pending",
            key=str(metadata.get("uid")),
            exc_info=True,
        )

    async def _reserve(self, pod: Object, node: str, check: _PodClaims | None) -> bool:
        """PreBind of the DynamicResources plugin: the Pod's claims allocated and reserved."""
        if self._dra is None or check is None:
            return True
        try:
            await self._dra.reserve(pod, self._nodes.objects[("", node)], check.plans[node])
        except ApiException as error:
            log.warning(
                "reserving claims of %s on %s failed: %s",
                pod["metadata"]["name"],
                node,
                error.reason,
            )
            return False
        return True

    async def _release_claims(self) -> None:
        """Reservations of Pods that are gone or done are dropped; claims left without a
        consumer are deallocated (the resourceclaim controller's job in a real cluster)."""
        assert self._dra is not None
        api = client.CustomObjectsApi(self._api_client)
        for claim in release(self._dra.claims.objects, self._pods.objects):
            metadata = claim["metadata"]
            try:
                await api.replace_namespaced_custom_object_status(
                    GROUP, VERSION, metadata["namespace"], "resourceclaims", metadata["name"], claim
                )
            except ApiException as error:  # changed meanwhile: the next pass sees it again
                log.info("releasing claim %s failed: %s", metadata["name"], error.reason)

    async def _claims_from_templates(self) -> None:
        """Claims made for Pods from the templates they name, and recorded in their status
        (the resourceclaim controller's job in a real cluster); a Pod waits for them."""
        assert self._dra is not None
        for todo in template_claims(
            self._pods.objects.values(), self._dra.templates.objects, self._dra.current_claims()
        ):
            try:
                await self._record_template_claims(todo)
            except ApiException as error:  # the next pass tries again
                log.info("claims of %s: %s", todo.pod["metadata"]["name"], error.reason)

    async def _record_template_claims(self, todo: TemplateClaims) -> None:
        metadata = todo.pod["metadata"]
        namespace = metadata["namespace"]
        api = client.CustomObjectsApi(self._api_client)
        statuses = [
            *((todo.pod.get("status") or {}).get("resourceClaimStatuses") or []),
            *todo.statuses,
        ]
        for body in todo.create:
            created = await api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "resourceclaims", body
            )
            assert self._dra is not None
            self._dra.assume(created)
            entry = body["metadata"]["annotations"][POD_CLAIM_NAME_ANNOTATION]
            statuses.append({"name": entry, "resourceClaimName": created["metadata"]["name"]})
        if todo.create or todo.statuses:
            await self._core.patch_namespaced_pod_status(
                metadata["name"], namespace, {"status": {"resourceClaimStatuses": statuses}}
            )

    async def _bind(self, pod: Object, node: str) -> bool:
        metadata = pod["metadata"]
        body = client.V1Binding(
            metadata=client.V1ObjectMeta(name=metadata["name"], namespace=metadata["namespace"]),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name=node),
        )
        try:
            # The server answers a binding with a Status, which the generated client cannot
            # parse as the Binding its stubs promise; take the raw response instead.
            response = await self._core.create_namespaced_pod_binding(
                metadata["name"], metadata["namespace"], body, _preload_content=False
            )
            cast(aiohttp.ClientResponse, response).release()
        except ApiException as error:
            log.warning(
                "binding %s/%s to %s failed: %s",
                metadata["namespace"],
                metadata["name"],
                node,
                error.reason,
            )
            return False
        log.info("bound %s/%s to %s", metadata["namespace"], metadata["name"], node)
        await record_event(
            self._core,
            {**pod, "apiVersion": "v1", "kind": "Pod"},
            "Scheduled",
            f"Successfully assigned {metadata['namespace']}/{metadata['name']} to {node}",
            component=SCHEDULER_NAME,
        )
        return True

    async def _report_unschedulable(self, pod: Object, message: str) -> None:
        """The PodScheduled condition (False, Unschedulable) and a FailedScheduling Event,
        as the scheduler writes them, each time the reason changes."""
        metadata = pod["metadata"]
        uid = metadata["uid"]
        if self._reported.get(uid) == message:
            return
        self._reported[uid] = message
        condition = {
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": None, "lastTransitionTime": _now(),
        }  # fmt: skip
        conditions = [
            c
            for c in (pod.get("status") or {}).get("conditions") or []
            if c.get("type") != "PodScheduled"
        ]
        try:
            await self._core.patch_namespaced_pod_status(
                metadata["name"],
                metadata["namespace"],
                {"status": {"conditions": [*conditions, condition]}},
            )
        except ApiException as error:  # gone meanwhile, or the next pass writes it
            log.info("recording why %s waits failed: %s", metadata["name"], describe(error))
        await record_event(
            self._core,
            {**pod, "apiVersion": "v1", "kind": "Pod"},
            "FailedScheduling",
            message,
            component=SCHEDULER_NAME,
            kind="Warning",
        )


class _PodClaims:
    """The DynamicResources filter for one Pod: remembers each fitting node's plan."""

    def __init__(self, dra: DynamicResources) -> None:
        self._dra = dra
        self.plans: dict[str, NodePlan] = {}

    def resources(self, node: scheduling.Object) -> set[str]:
        return self._dra.dra_resources(node)

    def problem(self, pod: scheduling.Object, node: scheduling.Object) -> str | None:
        decided = self._dra.plan(pod, node)
        if isinstance(decided, str):
            return decided
        self.plans[node["metadata"]["name"]] = decided
        return None
