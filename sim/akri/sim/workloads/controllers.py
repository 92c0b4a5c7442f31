"""The DaemonSet, ReplicaSet, Deployment, Job and disruption controllers of the simulated control
plane (and the service-account controller's `default` ServiceAccount in every namespace).

Level-triggered like kube-controller-manager's: watches mark objects dirty (a pod marks its
controlling owner, a ReplicaSet its Deployment, a Node every DaemonSet), and each dirty object
is reconciled from the caches with `akri.sim.workloads.plan`. What a controller wrote is
"expected" until its caches show it, and the owner is not reconciled again before that (or a
minute passed), so a slow watch never makes it create a pod twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Final, Generic, TypeVar

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.kube.calls import call, describe
from akri.kube.reflector import EventType, Handler, Key, Object, Reflector, object_key
from akri.sim.workloads import disruption, plan

log = logging.getLogger(__name__)

Item = tuple[str, str, str]  # (kind, namespace, name)
EXPECTATION_TIMEOUT_S: Final = 60.0
RETRY_S: Final = 1.0
_API_ERRORS = (ApiException, aiohttp.ClientError, OSError, TimeoutError)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _revision(obj: Object) -> int:
    return int(obj["metadata"].get("resourceVersion") or 0)


class _Expectations:
    """Writes each owner made that the caches have not shown yet."""

    def __init__(self) -> None:
        self._pending: dict[Item, list[tuple[float, Callable[[], bool]]]] = {}

    def expect(self, owner: Item, seen: Callable[[], bool]) -> None:
        self._pending.setdefault(owner, []).append((time.monotonic(), seen))

    def settled(self, owner: Item) -> bool:
        deadline = time.monotonic() - EXPECTATION_TIMEOUT_S
        left = [
            (at, seen) for at, seen in self._pending.get(owner, []) if at > deadline and not seen()
        ]
        if left:
            self._pending[owner] = left
        else:
            self._pending.pop(owner, None)
        return not left


def _gone(cache: dict[Key, Object], key: Key, uid: str) -> Callable[[], bool]:
    def seen() -> bool:
        obj = cache.get(key)
        return (
            obj is None
            or obj["metadata"].get("uid") != uid
            or bool(obj["metadata"].get("deletionTimestamp"))
        )

    return seen


def _at_least(cache: dict[Key, Object], key: Key, revision: int) -> Callable[[], bool]:
    return lambda: key in cache and _revision(cache[key]) >= revision


Work = TypeVar("Work", bound=tuple[str, ...])


class _WorkQueue(Generic[Work]):
    """Marked items, each reconciled once per wake; one that failed on the API is retried later."""

    def __init__(self, reconcile: Callable[[Work], Awaitable[None]]) -> None:
        self._reconcile = reconcile
        self._dirty: set[Work] = set()
        self._wake = asyncio.Event()

    def mark(self, item: Work) -> None:
        self._dirty.add(item)
        self._wake.set()

    async def serve(self, *reflectors: Reflector) -> None:
        """Run the reflectors, and reconcile once they have all listed."""
        async with asyncio.TaskGroup() as tasks:
            for reflector in reflectors:
                tasks.create_task(reflector.run())
            for reflector in reflectors:
                await reflector.synced.wait()
            while True:
                await self._wake.wait()
                self._wake.clear()
                dirty, self._dirty = self._dirty, set()
                for item in sorted(dirty):
                    try:
                        await self._reconcile(item)
                    except _API_ERRORS as error:
                        log.warning("%s not reconciled: %s", "/".join(item), describe(error))
                        asyncio.get_running_loop().call_later(RETRY_S, self.mark, item)


class WorkloadControllers:
    """Runs until cancelled: `asyncio.create_task(WorkloadControllers(api).run())`."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self._apps = client.AppsV1Api(api_client)
        self._batch = client.BatchV1Api(api_client)
        self._core = client.CoreV1Api(api_client)
        self._queue = _WorkQueue[Item](self._reconcile)
        self._mark = self._queue.mark
        self._daemonsets = Reflector(
            self._apps.list_daemon_set_for_all_namespaces, self._marker("DaemonSet")
        )
        self._deployments = Reflector(
            self._apps.list_deployment_for_all_namespaces, self._marker("Deployment")
        )
        self._replicasets = Reflector(
            self._apps.list_replica_set_for_all_namespaces, self._replicaset_changed
        )
        self._jobs = Reflector(self._batch.list_job_for_all_namespaces, self._marker("Job"))
        self._pods = Reflector(self._core.list_pod_for_all_namespaces, self._pod_changed)
        self._nodes = Reflector(self._core.list_node, self._node_changed)
        self._namespaces = Reflector(self._core.list_namespace, self._namespace_changed)
        self._owned: dict[str, dict[Key, Object]] = {}
        """Controller uid -> the pods (or ReplicaSets) it controls."""
        self._owner_of: dict[Key, str] = {}
        self._expectations = _Expectations()

    async def run(self) -> None:
        await self._queue.serve(
            self._daemonsets, self._deployments, self._replicasets, self._jobs, self._pods,
            self._nodes, self._namespaces,
        )  # fmt: skip

    # --- events ----------------------------------------------------------------------------

    def _marker(self, kind: str) -> Handler:
        async def changed(_event: EventType, obj: Object) -> None:
            self._mark((kind, *object_key(obj)))

        return changed

    def _index(self, event: EventType, obj: Object, kinds: Iterable[str]) -> None:
        """Keep `_owned` current and mark the object's controller dirty."""
        key = object_key(obj)
        previous = self._owner_of.pop(key, None)
        if previous is not None:
            self._owned.get(previous, {}).pop(key, None)
        owner = plan.controller_of(obj)
        if owner is None or str(owner.get("kind")) not in kinds:
            return
        if event != "DELETED":
            self._owned.setdefault(owner["uid"], {})[key] = obj
            self._owner_of[key] = owner["uid"]
        self._mark((owner["kind"], obj["metadata"].get("namespace", ""), owner["name"]))

    async def _pod_changed(self, event: EventType, pod: Object) -> None:
        self._index(event, pod, ("DaemonSet", "ReplicaSet", "Job"))

    async def _replicaset_changed(self, event: EventType, replicaset: Object) -> None:
        self._index(event, replicaset, ("Deployment",))
        self._mark(("ReplicaSet", *object_key(replicaset)))

    async def _namespace_changed(self, event: EventType, namespace: Object) -> None:
        """The service-account controller's part: every active namespace has `default`."""
        if event == "ADDED" and not namespace["metadata"].get("deletionTimestamp"):
            self._mark(("ServiceAccount", namespace["metadata"]["name"], "default"))

    async def _node_changed(self, _event: EventType, _node: Object) -> None:
        for key in self._daemonsets.objects:
            self._mark(("DaemonSet", *key))

    # --- reconcile -------------------------------------------------------------------------

    async def _reconcile(self, item: Item) -> None:
        kind, namespace, name = item
        if kind == "ServiceAccount":
            body = {"metadata": {"name": name}}
            try:
                await call(self._core.create_namespaced_service_account, namespace, body)
            except ApiException as error:
                if error.status not in (409, 404):  # exists, or the namespace went away
                    raise
            return
        cache = {
            "DaemonSet": self._daemonsets,
            "ReplicaSet": self._replicasets,
            "Deployment": self._deployments,
            "Job": self._jobs,
        }[kind].objects
        cached = cache.get((namespace, name))
        if cached is None or cached["metadata"].get("deletionTimestamp"):
            return
        # listed objects carry no apiVersion/kind (watched ones do); owner references need both
        obj = {**cached, "apiVersion": "batch/v1" if kind == "Job" else "apps/v1", "kind": kind}
        if not self._expectations.settled(item):
            return
        owned = list(self._owned.get(obj["metadata"]["uid"], {}).values())
        now = datetime.now(UTC)
        if kind == "DaemonSet":
            nodes = self._nodes.objects.values()
            await self._carry_out(item, obj, plan.plan_daemonset(obj, nodes, owned, now))
        elif kind == "ReplicaSet":
            await self._carry_out(item, obj, plan.plan_replicaset(obj, owned, now))
        elif kind == "Job":
            await self._carry_out(item, obj, plan.plan_job(obj, owned, _now()))
        else:
            await self._sync_deployment(item, obj, owned)

    async def _create_pod(self, item: Item, body: Object) -> None:
        created = await call(self._core.create_namespaced_pod, item[1], body)
        name = created["metadata"]["name"]
        self._expectations.expect(item, lambda: (item[1], name) in self._pods.objects)

    async def _delete_pod(self, item: Item, pod: plan.Object) -> None:
        key, uid = (pod["metadata"]["namespace"], pod["metadata"]["name"]), pod["metadata"]["uid"]
        try:
            await call(
                self._core.delete_namespaced_pod,
                key[1],
                key[0],
                body={"preconditions": {"uid": uid}},
            )
        except ApiException as error:
            if error.status not in (404, 409):
                raise
            return
        self._expectations.expect(item, _gone(self._pods.objects, key, uid))

    async def _write_status(self, kind: str, obj: Object, status: plan.JSON) -> None:
        current = dict(obj.get("status") or {})
        if all(current.get(k) == v for k, v in status.items() if k != "conditions") and not (
            plan.conditions_changed(current.get("conditions") or [], status.get("conditions") or [])
        ):
            return
        if "conditions" in status:
            status["conditions"] = _keep_transition_times(
                current.get("conditions") or [], status["conditions"]
            )
        name, namespace = obj["metadata"]["name"], obj["metadata"]["namespace"]
        patch = {
            "DaemonSet": self._apps.patch_namespaced_daemon_set_status,
            "ReplicaSet": self._apps.patch_namespaced_replica_set_status,
            "Deployment": self._apps.patch_namespaced_deployment_status,
            "Job": self._batch.patch_namespaced_job_status,
        }[kind]
        await call(patch, name, namespace, {"status": status})

    async def _carry_out(self, item: Item, obj: Object, decided: plan.PodPlan) -> None:
        for body in decided.create:
            await self._create_pod(item, body)
        for pod in decided.delete:
            await self._delete_pod(item, pod)
        await self._write_status(item[0], obj, decided.status)
        min_ready = int((obj.get("spec") or {}).get("minReadySeconds") or 0)
        if decided.waiting_for_min_ready:  # becoming available is no event: look again then
            asyncio.get_running_loop().call_later(min_ready, self._mark, item)

    async def _sync_deployment(
        self, item: Item, deployment: Object, replicasets: list[Object]
    ) -> None:
        namespace = item[1]
        if (deployment.get("spec") or {}).get("paused"):
            return
        new = next((rs for rs in replicasets if plan.is_current(deployment, rs)), None)
        old = [rs for rs in replicasets if rs is not new]
        newest = max((plan.revision_of(rs) for rs in replicasets), default=0)
        if new is None:
            body = plan.replicaset_for(deployment, newest + 1)
            await call(self._apps.create_namespaced_replica_set, namespace, body)
            key = (namespace, body["metadata"]["name"])
            self._expectations.expect(item, lambda: key in self._replicasets.objects)
            return
        if plan.revision_of(new) < newest:  # a rollback to an older template
            await self._patch_replicaset(
                item, new, {"metadata": {"annotations": {plan.REVISION: str(newest + 1)}}}
            )
            return
        decided = plan.plan_rollout(deployment, new, old)
        for rs in replicasets:
            name = rs["metadata"]["name"]
            if name in decided.scale:
                await self._patch_replicaset(item, rs, {"spec": {"replicas": decided.scale[name]}})
            elif name in decided.delete:
                await call(self._apps.delete_namespaced_replica_set, name, namespace)
                self._expectations.expect(
                    item, _gone(self._replicasets.objects, object_key(rs), rs["metadata"]["uid"])
                )
        revision = str(plan.revision_of(new))
        if (deployment["metadata"].get("annotations") or {}).get(plan.REVISION) != revision:
            annotation = {"metadata": {"annotations": {plan.REVISION: revision}}}
            await call(self._apps.patch_namespaced_deployment, item[2], namespace, annotation)
        status = plan.deployment_status(deployment, new, replicasets, _now())
        await self._write_status("Deployment", deployment, status)

    async def _patch_replicaset(self, item: Item, replicaset: Object, body: Object) -> None:
        written = _revision(
            await call(
                self._apps.patch_namespaced_replica_set,
                replicaset["metadata"]["name"],
                item[1],
                body,
            )
        )
        self._expectations.expect(
            item, _at_least(self._replicasets.objects, object_key(replicaset), written)
        )


class DisruptionController:
    """Keeps every PodDisruptionBudget's status current with `disruption.budget_status`.

    A pod change marks the budgets of its namespace; each marked budget is recomputed from the
    caches and its status written only when it changed.
    """

    def __init__(self, api_client: client.ApiClient) -> None:
        self._policy = client.PolicyV1Api(api_client)
        core = client.CoreV1Api(api_client)
        self._queue = _WorkQueue[Key](self._sync)
        self._mark = self._queue.mark
        self._budgets = Reflector(
            self._policy.list_pod_disruption_budget_for_all_namespaces, self._budget_changed
        )
        self._pods = Reflector(core.list_pod_for_all_namespaces, self._pod_changed)

    async def run(self) -> None:
        await self._queue.serve(self._budgets, self._pods)

    async def _budget_changed(self, event: EventType, budget: Object) -> None:
        if event != "DELETED":
            self._mark(object_key(budget))

    async def _pod_changed(self, _event: EventType, pod: Object) -> None:
        namespace = pod["metadata"].get("namespace")
        for key in self._budgets.objects:
            if key[0] == namespace:
                self._mark(key)

    async def _sync(self, key: Key) -> None:
        budget = self._budgets.objects.get(key)
        if budget is None or budget["metadata"].get("deletionTimestamp"):
            return
        status = disruption.budget_status(budget, self._pods.objects.values(), _now())
        if status == (budget.get("status") or {}):
            return
        try:
            await call(
                self._policy.patch_namespaced_pod_disruption_budget_status,
                key[1],
                key[0],
                {"status": status},
            )
        except ApiException as error:
            if error.status != 404:
                raise


def _keep_transition_times(old: list[Object], new: list[plan.JSON]) -> list[plan.JSON]:
    """A condition whose status did not change keeps its lastTransitionTime."""
    before = {c.get("type"): c for c in old}
    for condition in new:
        previous = before.get(condition.get("type"))
        if previous is not None and previous.get("status") == condition.get("status"):
            condition["lastTransitionTime"] = previous.get(
                "lastTransitionTime", condition["lastTransitionTime"]
            )
            if previous.get("reason") == condition.get("reason"):
                condition["lastUpdateTime"] = previous.get(
                    "lastUpdateTime", condition["lastUpdateTime"]
                )
    return new
