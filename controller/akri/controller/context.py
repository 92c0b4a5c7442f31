"""What every reconcile shares: the caches with their indexes, API clients, the work queue,
the failure history, and the controller's tuning."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field

from kubernetes_asyncio import client

from akri import naming
from akri.api import Configuration, Instance
from akri.controller.cache import Cache, OnChange
from akri.controller.conditions import BrokerOutcome
from akri.controller.nodes import NodeWatch
from akri.controller.refusals import Refusals
from akri.controller.retries import Retries
from akri.controller.workqueue import WorkQueue
from akri.dra.devices import allocation_results
from akri.dra.mode import Mode
from akri.kube.reflector import ListFunction, Object
from akri.slots import ConfigurationHolder, NodeHolder, parse_usage

CONFIGURATION = "configuration"
INSTANCE = "instance"
NODE = "node"
POOL = "pool"
RESOURCE_API = ("resource.k8s.io", "v1")
"""The group and version of ResourceClaims and their templates."""
WorkKey = tuple[str, str, str]
"""(kind, namespace, name): which object to reconcile; nodes have no namespace."""


@dataclass(frozen=True)
class Tuning:
    """Knobs of one controller, in seconds where they are times."""

    namespace: str | None = None
    """Follow this namespace only; all namespaces when None."""
    pending_grace: float = 300.0
    """How long a broker Pod may stay Pending before it is recreated."""
    node_grace: float = 300.0
    """How long a node may be not Ready before its slots are freed."""
    backoff_initial: float = 2.0
    backoff_max: float = 300.0
    workers: int = 8
    max_in_flight: int = 32
    """API writes one controller has under way at once."""
    mode: Mode = Mode.DEVICE_PLUGIN
    """Allocation mode (docs/design.md §8a); `auto` is resolved when the controller starts."""


def owned_by(obj: Object, uid: str | None) -> bool:
    return any(
        ref.get("uid") == uid and ref.get("controller")
        for ref in obj["metadata"].get("ownerReferences") or []
    )


def _label_key(label: str, obj: Object) -> Iterable[Hashable]:
    value = (obj["metadata"].get("labels") or {}).get(label)
    return [] if value is None else [(obj["metadata"].get("namespace", ""), value)]


def _instance_configuration(obj: Object) -> Iterable[Hashable]:
    return [(obj["metadata"].get("namespace", ""), obj["spec"].get("configurationName"))]


def claim_pools(obj: Object) -> set[str]:
    """The akri.sh pools a ResourceClaim is allocated devices of."""
    return {str(result["pool"]) for result in allocation_results(obj)}


def instance_nodes(obj: Object) -> set[str]:
    """Nodes an Instance names: in `nodes`, or as a holder of one of its slots."""
    spec = obj.get("spec") or {}
    nodes = set(spec.get("nodes") or [])
    for value in (spec.get("deviceUsage") or {}).values():
        holder = parse_usage(value) if isinstance(value, str) else None
        if isinstance(holder, NodeHolder | ConfigurationHolder):
            nodes.add(holder.node)
    return nodes


class Caches:
    """One cache per kind the controller follows; broker kinds only with its label. In DRA
    mode also the ResourceClaimTemplates it makes and every ResourceClaim."""

    def __init__(
        self, api_client: client.ApiClient, namespace: str | None, on: OnChanges, *, dra: bool
    ) -> None:
        core, batch = client.CoreV1Api(api_client), client.BatchV1Api(api_client)
        custom = client.CustomObjectsApi(api_client)
        selector = f"{naming.LABEL_CONTROLLER}={naming.CONTROLLER_LABEL_VALUE}"

        def custom_list(
            plural: str, group: str = naming.GROUP, version: str = naming.VERSION
        ) -> ListFunction:
            if namespace is None:
                return functools.partial(custom.list_cluster_custom_object, group, version, plural)
            return functools.partial(
                custom.list_namespaced_custom_object, group, version, namespace, plural
            )

        def core_list(all_namespaces: ListFunction, namespaced: ListFunction) -> ListFunction:
            return all_namespaces if namespace is None else functools.partial(namespaced, namespace)

        by_instance = functools.partial(_label_key, naming.LABEL_INSTANCE)
        self.configurations = Cache(custom_list(Configuration.plural), on.configuration)
        self.instances = Cache(
            custom_list(Instance.plural),
            on.instance,
            {CONFIGURATION: _instance_configuration, NODE: instance_nodes},
        )
        self.pods = Cache(
            core_list(core.list_pod_for_all_namespaces, core.list_namespaced_pod),
            on.pod,
            {
                INSTANCE: by_instance,
                CONFIGURATION: functools.partial(_label_key, naming.LABEL_CONFIGURATION),
            },
            label_selector=selector,
        )
        self.jobs = Cache(
            core_list(batch.list_job_for_all_namespaces, batch.list_namespaced_job),
            on.job,
            {INSTANCE: by_instance},
            label_selector=selector,
        )
        self.services = Cache(
            core_list(core.list_service_for_all_namespaces, core.list_namespaced_service),
            on.service,
            label_selector=selector,
        )
        self.nodes = Cache(core.list_node, on.node)
        self.claim_templates: Cache | None = None
        """The Instances' ResourceClaimTemplates this controller makes (DRA mode)."""
        self.claims: Cache | None = None
        """Every ResourceClaim, indexed by the akri.sh pools it holds devices of: what a shared
        pool may offer depends on them, `akri.dra.devices` (DRA mode)."""
        if dra:
            self.claim_templates = Cache(
                custom_list("resourceclaimtemplates", *RESOURCE_API),
                on.claim_template,
                label_selector=selector,
            )
            self.claims = Cache(
                custom_list("resourceclaims", *RESOURCE_API), on.claim, {POOL: claim_pools}
            )

    def all(self) -> list[Cache]:
        followed = [
            self.configurations,
            self.instances,
            self.pods,
            self.jobs,
            self.services,
            self.nodes,
            self.claim_templates,
            self.claims,
        ]
        return [cache for cache in followed if cache is not None]


@dataclass(frozen=True)
class OnChanges:
    configuration: OnChange
    instance: OnChange
    pod: OnChange
    job: OnChange
    service: OnChange
    node: OnChange
    claim_template: OnChange
    claim: OnChange


@dataclass
class Context:
    api_client: client.ApiClient
    caches: Caches
    queue: WorkQueue[WorkKey]
    retries: Retries[tuple[str, str, str]]
    tuning: Tuning
    in_flight: asyncio.Semaphore
    nodes: NodeWatch
    """Which nodes are lost (deleted, or not Ready past the grace)."""
    outcomes: dict[tuple[str, str], BrokerOutcome] = field(default_factory=dict)
    """Latest broker creation outcome per Configuration (namespace, name)."""
    dra: bool = False
    """DRA mode (resolved at start): brokers get their slots through claims."""
    refusals: Refusals[WorkKey] = field(default_factory=Refusals)
    """The work whose writes the API refuses now, by Configuration (ControllerWriteRefused)."""

    @functools.cached_property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @functools.cached_property
    def batch(self) -> client.BatchV1Api:
        return client.BatchV1Api(self.api_client)

    @functools.cached_property
    def custom(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)
