"""The built-in kinds the emulator serves, with their defaults, fields and printer columns.

Only what Akri's agent, controller, kubelet emulator and a user's kubectl touch: Namespace,
Node, Pod, Service, Endpoints and EndpointSlice (the `kubernetes` Service's only), Event,
ConfigMap, Secret, Lease, Job and CustomResourceDefinition.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import datetime
import ipaddress
import itertools
from collections.abc import Callable
from typing import Any

from akri.sim import quantity
from akri.sim.apiserver import pod_updates
from akri.sim.apiserver.resources import Column, ResourceType
from akri.sim.apiserver.selectors import field_path
from akri.sim.apiserver.validation import batch, coordination, core
from akri.sim.apiserver.validation.meta import dns_label_no_dots

JSON = dict[str, Any]

CRD_GROUP = "apiextensions.k8s.io"
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


def _get(obj: JSON, path: str) -> Any:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def path_cell(path: str) -> Any:
    """A printer-column cell: the raw value at a dotted path, None when absent."""
    return lambda obj: _get(obj, path)


NAME = Column("Name", "string", path_cell("metadata.name"), "Name of the object", format="name")
AGE = Column("Age", "date", path_cell("metadata.creationTimestamp"), "Time since creation")


def _node_status(node: JSON) -> str:
    conditions = _get(node, "status.conditions") or []
    ready = next((c for c in conditions if c.get("type") == "Ready"), None)
    status = (
        "Unknown" if ready is None else ("Ready" if ready.get("status") == "True" else "NotReady")
    )
    if _get(node, "spec.unschedulable"):
        status += ",SchedulingDisabled"
    return status


def _node_address(kind: str) -> Callable[[JSON], str]:
    """The node's first address of `kind`, `<none>` without one (kubectl's wide columns)."""

    def cell(node: JSON) -> str:
        addresses = _get(node, "status.addresses") or []
        return next((a.get("address", "") for a in addresses if a.get("type") == kind), "<none>")

    return cell


def _pod_ready(pod: JSON) -> str:
    statuses = _get(pod, "status.containerStatuses") or []
    ready = sum(1 for s in statuses if s.get("ready"))
    return f"{ready}/{len(_get(pod, 'spec.containers') or [])}"


def _pod_status(pod: JSON) -> str:
    if _get(pod, "metadata.deletionTimestamp"):
        return "Terminating"
    return str(_get(pod, "status.reason") or _get(pod, "status.phase") or "Pending")


def _restarts(pod: JSON) -> int:
    return sum(s.get("restartCount", 0) for s in _get(pod, "status.containerStatuses") or [])


def _count(path: str, *more: str) -> Any:
    return lambda obj: sum(len(_get(obj, p) or {}) for p in (path, *more))


def _event_object(event: JSON) -> str:
    involved = event.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(event: JSON) -> Any:
    """kubectl's LAST SEEN: lastTimestamp, else the series' last observation, else eventTime."""
    return (
        event.get("lastTimestamp")
        or _get(event, "series.lastObservedTime")
        or event.get("eventTime")
    )


def _normalize_event(event: JSON) -> None:
    """Times as the server stores them: Time fields to the second, MicroTime fields to the
    microsecond, both in UTC with a Z (clients send other offsets and precisions)."""
    for field, style in (
        ("firstTimestamp", "%Y-%m-%dT%H:%M:%SZ"),
        ("lastTimestamp", "%Y-%m-%dT%H:%M:%SZ"),
        ("eventTime", "%Y-%m-%dT%H:%M:%S.%fZ"),
    ):
        value = event.get(field)
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                parsed = datetime.datetime.fromisoformat(value)
                if parsed.tzinfo is None:
                    parsed = parsed.replace(tzinfo=datetime.UTC)
                event[field] = parsed.astimezone(datetime.UTC).strftime(style)


def _job_completions(job: JSON) -> str:
    return f"{_get(job, 'status.succeeded') or 0}/{_get(job, 'spec.completions') or 1}"


def _prepare_namespace(namespace: JSON) -> None:
    meta = namespace.setdefault("metadata", {})
    # Set by the API server on every namespace, so selectors can name one namespace.
    meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")
    namespace.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
    namespace["status"] = {"phase": "Active"}


def prepare_pod_spec(spec: JSON) -> None:
    """Pod spec defaults, for Pods and for the pod templates of workloads."""
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)


def _prepare_pod(pod: JSON) -> None:
    prepare_pod_spec(pod.setdefault("spec", {}))


def _pod_problems(pod: JSON) -> list[tuple[str, str]]:
    return quantity.pod_problems(pod) + core.pod(pod)


def _pod_update_errors(old: JSON, new: JSON) -> list[tuple[str, str]]:
    spec = copy.deepcopy(new.get("spec") or {})
    prepare_pod_spec(spec)  # a real server defaults before it compares
    return pod_updates.spec_update_errors(old.get("spec") or {}, spec)


def _service_external_ip(service: JSON) -> str:
    """kubectl's EXTERNAL-IP: the external name or addresses, `<pending>` for a load balancer
    still without one, `<none>` otherwise."""
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName") or "")
    ingress = _get(service, "status.loadBalancer.ingress") or []
    addresses = [i.get("ip") or i.get("hostname") for i in ingress] + list(
        spec.get("externalIPs") or []
    )
    if addresses:
        return ",".join(str(a) for a in addresses if a)
    return "<pending>" if spec.get("type") == "LoadBalancer" else "<none>"


def _service_ports(service: JSON) -> str:
    """kubectl's PORT(S): `port/protocol` each, `port:nodePort/protocol` with a node port."""
    cells = []
    for port in _get(service, "spec.ports") or []:
        node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
        cells.append(f"{port.get('port')}{node_port}/{port.get('protocol', 'TCP')}")
    return ",".join(cells) or "<none>"


def _listed(items: list[str]) -> str:
    """kubectl's list of endpoints: the first three, then how many more."""
    if not items:
        return "<none>"
    more = f" + {len(items) - 3} more..." if len(items) > 3 else ""
    return ",".join(items[:3]) + more


def _endpoints_addresses(endpoints: JSON) -> str:
    return _listed(
        [
            f"{address.get('ip')}:{port.get('port')}"
            for subset in endpoints.get("subsets") or []
            for address in subset.get("addresses") or []
            for port in subset.get("ports") or [{}]
        ]
    )


def _slice_ports(endpoint_slice: JSON) -> str:
    ports = endpoint_slice.get("ports") or []
    return ",".join(str(p.get("port", "<unset>")) for p in ports) or "<unset>"


def _slice_addresses(endpoint_slice: JSON) -> str:
    return _listed(
        [a for e in endpoint_slice.get("endpoints") or [] for a in e.get("addresses") or []]
    )


def _service_preparer() -> Callable[[JSON], None]:
    """Defaults for Services; each server allocates cluster IPs from its own range."""
    cluster_ips = (str(ip) for ip in itertools.islice(SERVICE_CIDR.hosts(), 10, None))

    def prepare(service: JSON) -> None:
        spec = service.setdefault("spec", {})
        spec.setdefault("type", "ClusterIP")
        if spec.get("clusterIP") != "None":
            spec.setdefault("clusterIP", next(cluster_ips))
        spec.setdefault("clusterIPs", [spec["clusterIP"]] if spec.get("clusterIP") else [])
        for port in spec.get("ports") or []:
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
        service["status"] = {"loadBalancer": {}}

    return prepare


def _prepare_secret(secret: JSON) -> None:
    secret.setdefault("type", "Opaque")


def _fold_string_data(secret: JSON) -> None:
    """`stringData` is write-only: the server merges it into base64 `data` (it wins on a clash)."""
    plain = secret.pop("stringData", None) or {}
    if plain:
        data = secret.setdefault("data", {})
        for key, value in plain.items():
            data[key] = base64.b64encode(str(value).encode()).decode()


def _prepare_job(job: JSON) -> None:
    spec = job.setdefault("spec", {})
    spec.setdefault("completions", 1)
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)


def _fields(*paths: str) -> dict[str, Any]:
    return {path: field_path(path) for path in paths}


def _event_fields() -> dict[str, Any]:
    fields = _fields("reason", "reportingComponent", "type")
    fields["source"] = field_path("source.component")
    for name in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
        fields[f"involvedObject.{name}"] = field_path(f"involvedObject.{name}")
    return fields


def builtin_kinds() -> list[ResourceType]:
    """Fresh definitions of every built-in kind."""
    return [
        ResourceType(
            "", "v1", "Namespace", "namespaces", "namespace", False, ("ns",),
            subresources=frozenset({"status"}),
            columns=(NAME, Column("Status", "string", path_cell("status.phase")), AGE),
            field_labels=_fields("status.phase"),
            prepare_create=_prepare_namespace,
            name_check=dns_label_no_dots,
        ),
        ResourceType(
            "", "v1", "Node", "nodes", "node", False, ("no",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Status", "string", _node_status),
                Column("Roles", "string", lambda _: "<none>"),
                AGE,
                Column("Version", "string", path_cell("status.nodeInfo.kubeletVersion")),
                Column("Internal-IP", "string", _node_address("InternalIP"), priority=1),
                Column("External-IP", "string", _node_address("ExternalIP"), priority=1),
            ),
            field_labels=_fields("spec.unschedulable"),
        ),
        ResourceType(
            "", "v1", "Pod", "pods", "pod", True, ("po",), ("all",),
            subresources=frozenset({"status", "binding", "log"}),
            columns=(
                NAME,
                Column("Ready", "string", _pod_ready),
                Column("Status", "string", _pod_status),
                Column("Restarts", "integer", _restarts),
                AGE,
                Column("IP", "string", path_cell("status.podIP"), priority=1),
                Column("Node", "string", path_cell("spec.nodeName"), priority=1),
            ),
            field_labels=_fields(
                "spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                "spec.serviceAccountName", "spec.hostNetwork", "status.phase", "status.podIP",
                "status.nominatedNodeName",
            ),
            status_on_create={"phase": "Pending"},
            prepare_create=_prepare_pod,
            validate_update=_pod_update_errors,
            validate=_pod_problems,
            tracks_generation=True,
            returns_deleted_object=True,
        ),
        ResourceType(
            "", "v1", "Service", "services", "service", True, ("svc",), ("all",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Type", "string", path_cell("spec.type")),
                Column("Cluster-IP", "string", path_cell("spec.clusterIP")),
                Column("External-IP", "string", _service_external_ip),
                Column("Port(s)", "string", _service_ports),
                AGE,
                Column("Selector", "string", path_cell("spec.selector"), priority=1),
            ),
            prepare_create=_service_preparer(),
            validate=core.service,
            name_check=dns_label_no_dots,
            returns_deleted_object=True,
        ),
        ResourceType(
            "", "v1", "Endpoints", "endpoints", "endpoints", True, ("ep",),
            columns=(NAME, Column("Endpoints", "string", _endpoints_addresses), AGE),
        ),
        ResourceType(
            "discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True,
            columns=(
                NAME,
                Column("AddressType", "string", path_cell("addressType")),
                Column("Ports", "string", _slice_ports),
                Column("Endpoints", "string", _slice_addresses),
                AGE,
            ),
        ),
        ResourceType(
            "", "v1", "Event", "events", "event", True, ("ev",),
            columns=(
                Column("Last Seen", "date", _event_last_seen),
                Column("Type", "string", path_cell("type")),
                Column("Reason", "string", path_cell("reason")),
                Column("Object", "string", _event_object),
                Column("Message", "string", path_cell("message")),
            ),
            field_labels=_event_fields(),
            normalize=_normalize_event,
            validate=core.event,
        ),
        ResourceType(
            "", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",),
            columns=(NAME, Column("Data", "integer", _count("data", "binaryData")), AGE),
            validate=core.config_map,
        ),
        ResourceType(
            "", "v1", "Secret", "secrets", "secret", True,
            columns=(
                NAME,
                Column("Type", "string", path_cell("type")),
                Column("Data", "integer", _count("data")),
                AGE,
            ),
            field_labels=_fields("type"),
            prepare_create=_prepare_secret,
            normalize=_fold_string_data,
            validate=core.secret,
        ),
        ResourceType(
            "coordination.k8s.io", "v1", "Lease", "leases", "lease", True,
            columns=(NAME, Column("Holder", "string", path_cell("spec.holderIdentity")), AGE),
            validate=coordination.lease,
        ),
        ResourceType(
            "batch", "v1", "Job", "jobs", "job", True, (), ("all",),
            subresources=frozenset({"status"}),
            columns=(NAME, Column("Completions", "string", _job_completions), AGE),
            field_labels=_fields("status.successful"),
            status_on_create={},
            prepare_create=_prepare_job,
            validate=batch.job,
            tracks_generation=True,
            orphan_by_default=True,
        ),
        ResourceType(
            CRD_GROUP, "v1", "CustomResourceDefinition", "customresourcedefinitions",
            "customresourcedefinition", False, ("crd", "crds"), ("api-extensions",),
            subresources=frozenset({"status"}),
            columns=(
                NAME,
                Column("Created At", "string", path_cell("metadata.creationTimestamp")),
            ),
            tracks_generation=True,
        ),
    ]  # fmt: skip
