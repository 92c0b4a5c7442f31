"""The simulated scheduler's DynamicResources plugin: ResourceClaims allocated while a Pod is
placed, as kube-scheduler does (pkg/scheduler/framework/plugins/dynamicresources).

A Pod's claims are those named in `spec.resourceClaims` (`resourceClaimName`) and, for
extended resources that a DeviceClass backs (`extendedResourceName`) on a node without a device
plugin for them, one claim the scheduler makes for the Pod (DRAExtendedResource): named
`<pod>-extended-resources-<suffix>`, owned by the Pod, annotated
`resource.kubernetes.io/extended-resource-claim`, one request per container and resource
(`container-<i>-request-<j>`), recorded in the Pod's `status.extendedResourceClaimStatus`.
Claims a Pod names through `resourceClaimTemplateName` are made from the template first, as the
resourceclaim controller does (`template_claim`), and found through `status.resourceClaimStatuses`.
Allocation and `reservedFor` are written before the binding (PreBind). Claims written but not
yet seen through the watch are assumed, so one device is never given twice in a row.
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubernetes_asyncio import client

from akri.kube.reflector import Reflector
from akri.sim.dra_allocation import Allocation, AllocationError, InUse, Object, allocate, candidates
from akri.sim.scheduling import allocatable, container_requests, node_selector_matches

log = logging.getLogger(__name__)

GROUP, VERSION = "resource.k8s.io", "v1"
EXTENDED_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
GENERATED_BASE_LENGTH = 57
"""Longest generateName of a claim made from a template: 5 random characters and a hyphen
still fit a 63-character name (pkg/controller/resourceclaim/controller.go, handleClaim)."""


@dataclass
class PodClaims:
    """What a Pod needs from DRA: existing claims and an extended-resource claim to make."""

    existing: list[Object] = field(default_factory=list)
    extended: Object | None = None
    mappings: list[dict[str, str]] = field(default_factory=list)
    missing: str = ""
    """Why the Pod cannot be scheduled yet (a claim it names does not exist)."""


@dataclass
class NodePlan:
    allocations: dict[str, Allocation]  # claim name ("" for the extended claim) -> allocation


class DynamicResources:
    """Follows classes, slices and claims; decides and writes claims for the scheduler."""

    def __init__(self, api_client: client.ApiClient, on_change: Any) -> None:
        self._api = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self.classes = Reflector(self._lister("deviceclasses"), on_change)
        self.slices = Reflector(self._lister("resourceslices"), on_change)
        self.claims = Reflector(self._lister("resourceclaims"), on_change)
        self.templates = Reflector(self._lister("resourceclaimtemplates"), on_change)
        self._assumed: dict[tuple[str, str], Object] = {}

    def _lister(self, plural: str) -> Any:
        return functools.partial(self._api.list_cluster_custom_object, GROUP, VERSION, plural)

    def reflectors(self) -> list[Reflector]:
        return [self.classes, self.slices, self.claims, self.templates]

    def current_claims(self) -> dict[tuple[str, str], Object]:
        current: dict[tuple[str, str], Object] = dict(self.claims.objects)
        for key, claim in list(self._assumed.items()):
            seen = current.get(key)
            if seen is not None and int(seen["metadata"]["resourceVersion"]) >= int(
                claim["metadata"]["resourceVersion"]
            ):
                del self._assumed[key]
            else:
                current[key] = claim
        return current

    def assume(self, claim: Object) -> None:
        """A claim just written: counted until the watch brings this version or a newer one."""
        metadata = claim["metadata"]
        self._assumed[(metadata["namespace"], metadata["name"])] = claim

    def extended_resources(self) -> dict[str, str]:
        """Extended resource name -> the DeviceClass that backs it."""
        return {
            str(c["spec"]["extendedResourceName"]): str(c["metadata"]["name"])
            for c in self.classes.objects.values()
            if (c.get("spec") or {}).get("extendedResourceName")
        }

    def pod_claims(self, pod: Object, node_backed: Iterable[str] = ()) -> PodClaims:
        """The claims of `pod`; `node_backed` are extended resources a device plugin serves."""
        result = PodClaims()
        namespace = pod["metadata"]["namespace"]
        claims = self.current_claims()
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = entry.get("resourceClaimName")
            if name is None:
                statuses = (pod.get("status") or {}).get("resourceClaimStatuses") or []
                name = next(
                    (
                        s.get("resourceClaimName")
                        for s in statuses
                        if s.get("name") == entry.get("name")
                    ),
                    None,
                )
            claim = claims.get((namespace, name)) if name else None
            if claim is None:
                result.missing = f'waiting for resource claim "{name or entry.get("name")}"'
                continue
            result.existing.append(claim)
        backed = self.extended_resources()
        requests = []
        spec = pod.get("spec") or {}
        for index, container in enumerate(spec.get("containers") or []):
            wanted = container_requests(container)
            for number, resource in enumerate(
                sorted(r for r in wanted if r in backed and r not in node_backed)
            ):
                request = f"container-{index}-request-{number}"
                requests.append(
                    {
                        "name": request,
                        "exactly": {
                            "deviceClassName": backed[resource],
                            "allocationMode": "ExactCount",
                            "count": wanted[resource],
                        },
                    }
                )
                result.mappings.append(
                    {
                        "containerName": container["name"],
                        "resourceName": resource,
                        "requestName": request,
                    }
                )
        if requests:
            result.extended = {"spec": {"devices": {"requests": requests}}}
        return result

    def dra_resources(self, node: Object) -> set[str]:
        """Extended resources DRA serves on `node`: those no device plugin registered there (a
        plugin advertising none at the moment still owns its resource on that node)."""
        plugins = allocatable(node)
        return {r for r in self.extended_resources() if r not in plugins}

    def plan(self, pod: Object, node: Object) -> NodePlan | str:
        """The allocations the Pod's claims get on `node`, or why they do not fit."""
        needs = self.pod_claims(pod, set(allocatable(node)) - self.dra_resources(node))
        if needs.missing:
            return needs.missing
        claims = self.current_claims()
        in_use = InUse.of(c for c in claims.values() if (c.get("status") or {}).get("allocation"))
        devices = candidates(self.slices.objects.values(), node)
        classes = {str(c["metadata"]["name"]): c for c in self.classes.objects.values()}
        allocations: dict[str, Allocation] = {}
        todo = [(str(c["metadata"]["name"]), c) for c in needs.existing]
        if needs.extended is not None:
            todo.append(("", needs.extended))
        for name, claim in todo:
            allocation = (claim.get("status") or {}).get("allocation")
            if allocation is not None:  # allocated before: usable where its selector allows
                selector = allocation.get("nodeSelector")
                if selector is not None and not node_selector_matches(selector, node):
                    return f'resource claim "{name}" is allocated on other nodes'
                continue
            try:
                decided = allocate(claim, classes, devices, in_use)
            except AllocationError as error:
                return f"claim cannot be allocated: {error}"
            if decided is None:
                return "cannot allocate all claims"
            allocations[name] = decided
        return NodePlan(allocations)

    async def reserve(self, pod: Object, node: Object, plan: NodePlan) -> None:
        """PreBind: create the extended claim, write allocations and reservations."""
        metadata = pod["metadata"]
        namespace = metadata["namespace"]
        needs = self.pod_claims(pod, set(allocatable(node)) - self.dra_resources(node))
        consumer = {"resource": "pods", "name": metadata["name"], "uid": metadata["uid"]}
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        for claim in needs.existing:
            name = str(claim["metadata"]["name"])
            status = dict(claim.get("status") or {})
            if name in plan.allocations:
                status["allocation"] = plan.allocations[name].status(now)
            reserved = [
                r for r in status.get("reservedFor") or [] if r.get("uid") != metadata["uid"]
            ]
            status["reservedFor"] = [*reserved, consumer]
            body = {**claim, "status": status}
            stored = await self._api.replace_namespaced_custom_object_status(
                GROUP, VERSION, namespace, "resourceclaims", name, body
            )
            self.assume(stored)
        if needs.extended is None or "" not in plan.allocations:
            return
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ResourceClaim",
            "metadata": {
                "name": f"{metadata['name']}-extended-resources-{secrets.token_hex(3)}"[:253],
                "namespace": namespace,
                "annotations": {EXTENDED_CLAIM_ANNOTATION: "true"},
                "ownerReferences": [pod_owner(pod)],
            },
            "spec": needs.extended["spec"],
        }
        created = await self._api.create_namespaced_custom_object(
            GROUP, VERSION, namespace, "resourceclaims", body
        )
        created["status"] = {
            "allocation": plan.allocations[""].status(now),
            "reservedFor": [consumer],
        }
        stored = await self._api.replace_namespaced_custom_object_status(
            GROUP, VERSION, namespace, "resourceclaims", created["metadata"]["name"], created
        )
        self.assume(stored)
        pod_status = {
            "extendedResourceClaimStatus": {
                "resourceClaimName": stored["metadata"]["name"],
                "requestMappings": needs.mappings,
            }
        }
        await self._core.patch_namespaced_pod_status(
            metadata["name"], namespace, {"status": pod_status}
        )


def pod_owner(pod: Object) -> dict[str, Any]:
    """The controller reference a claim made for `pod` carries, so it goes with the pod."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "name": pod["metadata"]["name"],
        "uid": pod["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _owned_by(obj: Object, uid: str) -> bool:
    return any(
        r.get("uid") == uid and r.get("controller")
        for r in obj["metadata"].get("ownerReferences") or []
    )


def template_claim(pod: Object, entry: Mapping[str, Any], template: Object) -> Object:
    """The ResourceClaim the resourceclaim controller makes for a Pod's `entry` naming
    `template` (pkg/controller/resourceclaim/controller.go, handleClaim): generated name from
    the Pod and the entry, owned by the Pod (so it goes with it), the template's labels and
    annotations plus `resource.kubernetes.io/pod-claim-name`, the template's claim spec."""
    metadata = pod["metadata"]
    base = f"{metadata['name']}-{entry['name']}-"
    if len(base) > GENERATED_BASE_LENGTH:
        half = GENERATED_BASE_LENGTH // 2
        base = base[:half] + base[-half:]
    made = template.get("spec") or {}
    made_metadata = made.get("metadata") or {}
    annotations = {
        **(made_metadata.get("annotations") or {}),
        POD_CLAIM_NAME_ANNOTATION: entry["name"],
    }
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ResourceClaim",
        "metadata": {
            "generateName": base,
            "namespace": metadata["namespace"],
            "labels": dict(made_metadata.get("labels") or {}),
            "annotations": annotations,
            "ownerReferences": [pod_owner(pod)],
        },
        "spec": made.get("spec") or {},
    }


@dataclass(frozen=True)
class TemplateClaims:
    """What the resourceclaim controller does next for one Pod's template entries."""

    pod: Object
    create: list[Object] = field(default_factory=list)
    statuses: list[dict[str, str]] = field(default_factory=list)
    """The Pod's `status.resourceClaimStatuses` once the claims below exist (found ones
    included: a claim made before its status was written is not made twice)."""
    missing: list[str] = field(default_factory=list)
    """Templates that do not exist (yet): the Pod waits."""


def template_claims(
    pods: Iterable[Object],
    templates: Mapping[tuple[str, str], Object],
    claims: Mapping[tuple[str, str], Object],
) -> list[TemplateClaims]:
    """For each live unbound Pod with template entries that have no claim in its status: the
    claims to make, or the claims it already owns for them (findPodResourceClaim)."""
    result = []
    for pod in pods:
        metadata, spec = pod["metadata"], pod.get("spec") or {}
        if metadata.get("deletionTimestamp") or spec.get("nodeName"):
            continue
        namespace = metadata["namespace"]
        statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
        known = {s.get("name") for s in statuses}
        todo = TemplateClaims(pod)
        for entry in spec.get("resourceClaims") or []:
            template_name = entry.get("resourceClaimTemplateName")
            if not template_name or entry.get("name") in known:
                continue
            owned = next(
                (
                    c
                    for (ns, _), c in claims.items()
                    if ns == namespace
                    and _owned_by(c, metadata["uid"])
                    and (c["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION)
                    == entry["name"]
                ),
                None,
            )
            template = templates.get((namespace, template_name))
            if owned is not None:
                todo.statuses.append(
                    {"name": entry["name"], "resourceClaimName": owned["metadata"]["name"]}
                )
            elif template is None:
                todo.missing.append(template_name)
            else:
                todo.create.append(template_claim(pod, entry, template))
        if todo.create or todo.statuses or todo.missing:
            result.append(todo)
    return result


def release(
    claims: Mapping[tuple[str, str], Object], pods: Mapping[Any, Object]
) -> list[dict[str, Any]]:
    """The resourceclaim controller's part (pkg/controller/resourceclaim/controller.go): claims
    whose reservations name Pods that are gone or done, with those entries removed and the
    allocation cleared when no consumer is left."""
    live = {
        p["metadata"]["uid"]
        for p in pods.values()
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    }
    changed: list[dict[str, Any]] = []
    for claim in claims.values():
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        kept = [r for r in reserved if r.get("resource") != "pods" or r.get("uid") in live]
        if len(kept) == len(reserved):
            continue
        new_status = {k: v for k, v in status.items() if k != "reservedFor"}
        if kept:
            new_status["reservedFor"] = kept
        else:
            new_status.pop("allocation", None)
        changed.append({**claim, "status": new_status})
    return changed
