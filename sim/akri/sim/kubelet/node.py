"""Connects a kubelet emulator to the Kubernetes API server, as a kubelet's API side does.

Registers the Node, renews its Lease in kube-node-lease, publishes the device resources'
capacity and allocatable whenever they change (and a heartbeat every `heartbeat_s`), follows
the Pods bound to the node, admits them through the emulator and writes their status: Running,
with what Allocate answered in the `sim.akri.sh/allocations` annotation, or Failed with the
admission reason. Pods that are deleted or reach a terminal phase free their devices.

While the emulator is stopped ("node down") the bridge plays the node lifecycle controller and
reports the Ready condition as Unknown; pods bound meanwhile are admitted once it is back.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.backoff import Backoff
from akri.kube.calls import call, describe
from akri.kube.events import record_event
from akri.kube.reflector import Object, Reflector
from akri.logs import OnceLog
from akri.sim.kubelet import cdi, objects
from akri.sim.kubelet.dra import PrepareError, claim_names, uses_claims
from akri.sim.kubelet.kubelet import Kubelet
from akri.sim.kubelet.model import AdmissionError
from akri.sim.kubelet.runtime.pod import PodRuntime
from akri.sim.kubelet.runtime.processes import Processes
from akri.sim.podnet.addresses import NoPodAddress

log = logging.getLogger(__name__)

HEARTBEAT_S: Final = 10.0
"""How often the Ready condition's heartbeat is renewed (the kubelet's status frequency)."""
HTTP_CONFLICT: Final = 409
HTTP_NOT_FOUND: Final = 404
LEASE_NAMESPACE: Final = "kube-node-lease"
LEASE_DURATION_S: Final = 40
"""The kubelet's node lease: renewed every heartbeat, expired after 40 s without one."""
COMPONENT: Final = "kubelet"
_API_ERRORS = (ApiException, aiohttp.ClientError, OSError, TimeoutError)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class NodeBridge:
    """Runs until cancelled: `task = asyncio.create_task(NodeBridge(kubelet, api).run())`."""

    def __init__(
        self,
        kubelet: Kubelet,
        api_client: client.ApiClient,
        *,
        heartbeat_s: float = HEARTBEAT_S,
        processes: Processes | None = None,
    ) -> None:
        """With `processes`, containers of the project's image run as local processes."""
        self._kubelet = kubelet
        self._processes = processes
        self._runtimes: dict[str, PodRuntime] = {}
        self._finished: dict[str, PodRuntime] = {}
        """Stopped runtimes of completed pods: their logs stay readable until the pod goes."""
        self._node = kubelet.node_name
        self._core = client.CoreV1Api(api_client)
        self._custom = client.CustomObjectsApi(api_client)
        self._wiped = 0
        self._leases = client.CoordinationV1Api(api_client)
        self._heartbeat_s = heartbeat_s
        self._pods = Reflector(
            self._core.list_pod_for_all_namespaces,
            self._pod_changed,
            field_selector=f"spec.nodeName={self._node}",
        )
        self._wake = asyncio.Event()
        self._published: set[str] = set()
        self._last_status: dict[str, Any] | None = None
        self._ready: bool | None = None
        self._transition = _now()
        self._outcomes: dict[str, dict[str, Any]] = {}
        """Pod uid -> the status the kubelet decided; written until the write succeeds."""
        self._written: set[str] = set()
        self._sandbox_waits: dict[str, dict[str, dict[str, str]]] = {}
        """Pod uid -> its devices' env, for admitted pods whose sandbox is not made yet."""
        self._sandbox_reported: set[str] = set()
        self._warn_once = OnceLog(log)

    async def run(self) -> None:
        try:
            await self._serve()
        finally:
            await asyncio.gather(*(runtime.stop() for runtime in self._runtimes.values()))
            self._runtimes.clear()

    def log_text(self, uid: str, container: str, previous: bool) -> str:
        """What a container of a pod on this node wrote (empty for containers without a process)."""
        runtime = self._runtimes.get(uid) or self._finished.get(uid)
        return runtime.log_text(container, previous) if runtime is not None else ""

    async def exec(
        self, uid: str, container: str, command: Sequence[str], stdin: bool
    ) -> asyncio.subprocess.Process:
        """`kubectl exec` in a container of a pod on this node; LookupError when it has none."""
        runtime = self._runtimes.get(uid)
        if runtime is None:
            raise LookupError("the pod runs no processes in akri sim")
        return await runtime.exec(container, command, stdin)

    async def _serve(self) -> None:
        await self._register_node()
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._pods.run(), name=f"bridge-pods-{self._node}")
            tasks.create_task(self._follow_kubelet(), name=f"bridge-kubelet-{self._node}")
            tasks.create_task(self._heartbeat(), name=f"bridge-heartbeat-{self._node}")
            await self._pods.synced.wait()
            while True:
                await self._wake.wait()
                self._wake.clear()
                try:
                    await self._sync_pods()
                except Exception:  # the next change tries again; a kubelet never stops
                    log.exception("syncing the pods of %s failed", self._node)

    # --- Node ------------------------------------------------------------------------------

    async def _register_node(self) -> None:
        """Create the Node (an existing one is adopted), retrying until the API answers."""
        labels = {"kubernetes.io/hostname": self._node, "kubernetes.io/os": "linux"}
        body = client.V1Node(metadata=client.V1ObjectMeta(name=self._node, labels=labels))
        network = self._processes.node.network if self._processes is not None else None
        if network is not None:  # the pod CIDR a node IPAM controller would have given it
            body.spec = client.V1NodeSpec(pod_cidr=str(network.cidr), pod_cidrs=[str(network.cidr)])
        backoff = Backoff()
        while True:
            try:
                await self._core.create_node(body)
                return
            except ApiException as error:
                if error.status == HTTP_CONFLICT:
                    return
                reason: object = error.reason
            except (aiohttp.ClientError, OSError, TimeoutError) as error:
                reason = error
            delay = backoff.next_delay()
            log.warning(
                "registering node %s failed (%s); retry in %.1fs", self._node, reason, delay
            )
            await asyncio.sleep(delay)

    async def _follow_kubelet(self) -> None:
        while True:
            seen = self._kubelet.version
            await self._wipe_resource_slices()
            await self._publish_status(heartbeat=False)
            self._wake.set()  # a kubelet back up admits the pods that waited for it
            await self._kubelet.wait_for(functools.partial(self._kubelet_changed, seen))

    async def _wipe_resource_slices(self) -> None:
        """Once per kubelet start, when it runs DRA; retried at the next change until done."""
        kubelet = self._kubelet
        if kubelet.plugins_registry_dir is None or self._wiped == kubelet.starts:
            return
        group = ("resource.k8s.io", "v1", "resourceslices")
        try:  # a DeleteCollection upstream; the client offers no field selector for that
            listed = await self._custom.list_cluster_custom_object(
                *group, field_selector=f"spec.nodeName={self._node}"
            )
            for item in listed.get("items") or []:
                try:
                    await self._custom.delete_cluster_custom_object(
                        *group, item["metadata"]["name"]
                    )
                except ApiException as error:
                    if error.status != HTTP_NOT_FOUND:
                        raise
        except _API_ERRORS as error:
            log.warning("ResourceSlices of %s not deleted: %s", self._node, describe(error))
            return
        self._wiped = kubelet.starts

    def _kubelet_changed(self, seen: int) -> bool:
        return self._kubelet.version != seen

    async def _heartbeat(self) -> None:
        while True:
            await self._renew_lease()
            await asyncio.sleep(self._heartbeat_s)
            await self._publish_status(heartbeat=True)
            self._wake.set()  # also retries pod status writes that failed

    async def _renew_lease(self) -> None:
        """Renew the node's Lease in kube-node-lease (made at first, owned by the Node), as a
        kubelet does while it runs; a stopped kubelet lets it expire."""
        if not self._kubelet.running:
            return
        now = datetime.now(UTC)
        spec = {
            "holderIdentity": self._node,
            "leaseDurationSeconds": LEASE_DURATION_S,
            "renewTime": now.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        try:
            try:
                await self._leases.patch_namespaced_lease(
                    self._node, LEASE_NAMESPACE, {"spec": spec}
                )
            except ApiException as error:
                if error.status != HTTP_NOT_FOUND:
                    raise
                node = await self._core.read_node(self._node)
                owner = client.V1OwnerReference(
                    api_version="v1", kind="Node", name=self._node, uid=node.metadata.uid
                )
                body = client.V1Lease(
                    metadata=client.V1ObjectMeta(name=self._node, owner_references=[owner]),
                    spec=client.V1LeaseSpec(
                        holder_identity=self._node,
                        lease_duration_seconds=LEASE_DURATION_S,
                        renew_time=now,
                    ),
                )
                await self._leases.create_namespaced_lease(LEASE_NAMESPACE, body)
        except _API_ERRORS as error:
            log.warning("lease of %s not renewed: %s", self._node, describe(error))

    async def _publish_status(self, *, heartbeat: bool) -> None:
        """Write Node status when it changed, or to renew the heartbeat."""
        ready = self._kubelet.running
        if ready != self._ready:
            self._ready, self._transition = ready, _now()
        resources = self._kubelet.resources()
        dropped = self._published - resources.keys()
        status = objects.node_status(
            resources,
            dropped,
            ready=ready,
            heartbeat=_now(),
            transition=self._transition,
            addresses=self._addresses(),
        )
        if not heartbeat and _without_heartbeat(status) == _without_heartbeat(self._last_status):
            return
        try:
            await self._core.patch_node_status(self._node, {"status": status})
        except _API_ERRORS as error:
            log.warning("node status of %s not written: %s", self._node, describe(error))
            return
        self._last_status = status
        self._published |= resources.keys()

    def _addresses(self) -> list[dict[str, str]]:
        """The node's InternalIP on the pod network's bridge, and its hostname; none without."""
        host = self._processes.node if self._processes is not None else None
        if host is None or host.network is None:
            return []
        return [
            {"type": "InternalIP", "address": host.host_ip},
            {"type": "Hostname", "address": self._node},
        ]

    # --- Pods ------------------------------------------------------------------------------

    async def _pod_changed(self, _kind: str, _pod: Object) -> None:
        self._wake.set()

    async def _sync_pods(self) -> None:
        pods = {pod["metadata"]["uid"]: pod for pod in self._pods.objects.values()}
        for uid in list(self._kubelet.pods):
            pod = pods.get(uid)
            if pod is None or _phase(pod) in objects.TERMINAL_PHASES:
                self._kubelet.remove_pod(uid)  # deleted or completed: its devices are free
        if self._kubelet.running and self._kubelet.dra.claims:
            active = {u for u, p in pods.items() if _phase(p) not in objects.TERMINAL_PHASES}
            await self._kubelet.dra.reconcile(active)
        for uid, runtime in list(self._runtimes.items()):
            pod = pods.get(uid)
            if pod is None or _phase(pod) in objects.TERMINAL_PHASES:
                # Forgotten only once stopped: a bridge cancelled meanwhile stops it in run().
                await runtime.stop()
                del self._runtimes[uid]
                if pod is not None:
                    self._finished[uid] = runtime
        for uid in self._finished.keys() - pods.keys():
            del self._finished[uid]
        for uid in self._outcomes.keys() - pods.keys():
            del self._outcomes[uid]
            self._written.discard(uid)
        for uid in list(self._sandbox_waits):
            pod = pods.get(uid)
            if pod is None or _phase(pod) in objects.TERMINAL_PHASES:
                del self._sandbox_waits[uid]
                self._sandbox_reported.discard(uid)
            elif (status := await self._start_runtime(pod)) is not None:
                self._outcomes[uid]["status"] = status
                self._written.discard(uid)
        for pod in sorted(pods.values(), key=_created):
            uid = pod["metadata"]["uid"]
            if uid not in self._outcomes:
                if _phase(pod) in objects.TERMINAL_PHASES or not self._kubelet.running:
                    continue
                name = f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')}"
                try:
                    self._outcomes[uid] = await self._admit(pod)
                except (PrepareError, cdi.UnresolvableDevices) as error:  # in an event already
                    reason = str(error)  # not the error: its traceback holds a plugin channel
                    log.info("pod %s waits for its claims: %s", name, reason)
                    continue
                except Exception:  # one odd pod must not keep the node's other pods waiting
                    self._warn_once(f"cannot admit {name} on {self._node}", key=uid, exc_info=True)
                    continue
            outcome = self._outcomes[uid]
            status = outcome["status"]
            if uid not in self._written and await self._write(pod, outcome):
                outcome.pop("metadata", None)  # the allocations are recorded
                if outcome["status"] is status:  # else it changed during the write: again
                    self._written.add(uid)

    async def _admit(self, pod: Object) -> dict[str, Any]:
        metadata = pod["metadata"]
        init_containers, containers = objects.containers_of(pod)
        try:
            admitted = await self._kubelet.admit(
                metadata["uid"],
                metadata["name"],
                metadata["namespace"],
                init_containers,
                containers,
            )
        except AdmissionError as error:
            log.info("pod %s/%s rejected: %s", metadata["namespace"], metadata["name"], error)
            return {"status": objects.failed_status(error.reason, error.message)}
        annotations = {objects.ALLOCATIONS_ANNOTATION: objects.allocations(admitted)}
        device_env = objects.allocated_env(admitted)
        if uses_claims(pod):
            edits = await self._prepare_claims(pod)
            annotations[objects.CDI_ANNOTATION] = json.dumps(
                {name: e.to_json() for name, e in edits.items()}, sort_keys=True
            )
            for name, container_edits in edits.items():
                device_env.setdefault(name, {}).update(container_edits.env)
        status = objects.running_status(pod, _now())
        if self._processes is not None and self._processes.wants(pod):
            self._sandbox_waits[metadata["uid"]] = device_env
            status = await self._start_runtime(pod) or objects.creating_status(pod)
        return {"metadata": {"annotations": annotations}, "status": status}

    async def _start_runtime(self, pod: Object) -> dict[str, Any] | None:
        """Run the pod's containers: their status; None while its sandbox cannot be made (no
        free pod address), which is recorded once in a FailedCreatePodSandBox Event, as a
        kubelet reports a CNI failure; the pod stays ContainerCreating and is tried again
        when the node's pods change."""
        assert self._processes is not None
        uid = pod["metadata"]["uid"]
        try:
            runtime = self._processes.runtime(
                pod, functools.partial(self._runtime_changed, uid), self._sandbox_waits[uid]
            )
        except NoPodAddress as error:
            if uid not in self._sandbox_reported:
                self._sandbox_reported.add(uid)
                log.info("pod %s waits for a pod address: %s", pod["metadata"]["name"], error)
                await record_event(
                    self._core,
                    {**pod, "apiVersion": "v1", "kind": "Pod"},
                    "FailedCreatePodSandBox",
                    f"Failed to create pod sandbox: failed to set up the pod network: {error}",
                    component=COMPONENT,
                    kind="Warning",
                )
            return None
        del self._sandbox_waits[uid]
        self._sandbox_reported.discard(uid)
        self._runtimes[uid] = runtime
        runtime.start()
        return runtime.status()

    async def _prepare_claims(self, pod: Object) -> dict[str, cdi.Edits]:
        """Prepare the pod's claims; the CDI edits of each container. Raises when the pod
        cannot run yet (after recording why in an event)."""
        namespace = pod["metadata"]["namespace"]
        dra = self._kubelet.dra
        try:
            claims = []
            for _, name in claim_names(pod):
                try:
                    claims.append(
                        await call(
                            self._custom.get_namespaced_custom_object,
                            "resource.k8s.io",
                            "v1",
                            namespace,
                            "resourceclaims",
                            name,
                        )
                    )
                except ApiException as error:
                    raise PrepareError(f"fetch ResourceClaim {name}: {error.reason}") from None
            await dra.prepare(pod, claims)
            edits = {
                c["name"]: cdi.resolve(self._kubelet.cdi_dirs, dra.cdi_ids(pod, c))
                for c in (pod.get("spec") or {}).get("containers") or []
            }
        except (PrepareError, cdi.UnresolvableDevices) as error:
            reason = (
                "FailedPrepareDynamicResources"
                if isinstance(error, PrepareError)
                else "CreateContainerError"
            )
            await record_event(
                self._core,
                {**pod, "apiVersion": "v1", "kind": "Pod"},
                reason,
                f"Failed to prepare dynamic resources: {error}",
                component=COMPONENT,
                kind="Warning",
            )
            raise
        return edits

    def _runtime_changed(self, uid: str) -> None:
        runtime, outcome = self._runtimes.get(uid), self._outcomes.get(uid)
        if runtime is not None and outcome is not None:
            outcome["status"] = runtime.status()
            self._written.discard(uid)
            self._wake.set()

    async def _write(self, pod: Object, outcome: dict[str, Any]) -> bool:
        """Annotation first, so whoever sees the pod Running can read its allocations."""
        name, namespace = pod["metadata"]["name"], pod["metadata"]["namespace"]
        try:
            if "metadata" in outcome:
                await self._core.patch_namespaced_pod(
                    name, namespace, {"metadata": outcome["metadata"]}
                )
            await self._core.patch_namespaced_pod_status(
                name, namespace, {"status": outcome["status"]}
            )
        except _API_ERRORS as error:
            if isinstance(error, ApiException) and error.status == HTTP_NOT_FOUND:
                log.info("pod %s/%s was deleted before its status was written", namespace, name)
            else:
                log.warning("status of pod %s/%s not written: %s", namespace, name, describe(error))
            return False
        status = outcome["status"]
        if status["phase"] == "Failed" and "reason" in status:
            await record_event(
                self._core,
                {**pod, "apiVersion": "v1", "kind": "Pod"},
                status["reason"],
                status["message"],
                component=COMPONENT,
                kind="Warning",
            )
        return True


def _phase(pod: Object) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _created(pod: Object) -> str:
    return str(pod["metadata"].get("creationTimestamp") or "")


def _without_heartbeat(status: dict[str, Any] | None) -> object:
    if status is None:
        return None
    conditions = [
        {k: v for k, v in c.items() if k != "lastHeartbeatTime"} for c in status["conditions"]
    ]
    return {**status, "conditions": conditions}
