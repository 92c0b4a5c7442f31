"""The objects the controller wants to exist, built from a Configuration and an Instance.

Pure functions over the API models and plain dicts: every name, label, owner and the
`{{PLACEHOLDER}}` rule of docs/design.md §4 is decided here and nowhere else. Each built
object carries a digest of what it was built from (`SPEC_HASH_ANNOTATION`), so the
controller can tell an outdated broker from a current one without comparing fields the API
server defaults.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from akri import naming
from akri.api import Configuration, Instance, Resource

Object = dict[str, Any]

SPEC_HASH_ANNOTATION = f"{naming.GROUP}/spec-hash"
"""Digest of what a broker or Service was built from; a different digest means rebuild."""
POD_RUNNING = "Running"


class BrokerSpecError(ValueError):
    """The Configuration's broker or service spec cannot be turned into an object."""


def spec_hash(*parts: object) -> str:
    """A stable digest of JSON-able parts (key order does not matter)."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def _name(resource: Resource) -> str:
    if not resource.metadata.name:
        raise ValueError(f"a {resource.kind} without a name")
    return resource.metadata.name


def _namespace(resource: Resource) -> str:
    return resource.metadata.namespace or "default"


def broker_labels(instance: Instance, node: str | None = None) -> dict[str, str]:
    """Labels on every broker: which Configuration, Instance (and node) it serves, and by whom."""
    labels = {
        naming.LABEL_CONFIGURATION: instance.spec.configuration_name,
        naming.LABEL_INSTANCE: _name(instance),
        naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
    }
    if node is not None:
        labels[naming.LABEL_TARGET_NODE] = node
    return labels


def _replace_in(resources: object, where: str, resource: str) -> object:
    if resources is None:
        return None
    if not isinstance(resources, Mapping):
        raise BrokerSpecError(f"{where} must be a map of resource names to quantities")
    return {resource if key == naming.PLACEHOLDER else key: q for key, q in resources.items()}


def _containers(pod_spec: Object) -> list[tuple[str, int, Object]]:
    """(field, index, container) of every init and app container; raises BrokerSpecError
    when the spec is not shaped like a PodSpec where the placeholder rule needs it to be."""
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise BrokerSpecError("the broker pod spec needs a non-empty list of containers")
    found = []
    for field in ("initContainers", "containers"):
        listed = pod_spec.get(field)
        if listed is None:
            continue
        if not isinstance(listed, list):
            raise BrokerSpecError(f"{field} must be a list")
        for index, container in enumerate(listed):
            if not isinstance(container, dict):
                raise BrokerSpecError(f"{field}[{index}] must be an object")
            resources = container.get("resources")
            if resources is not None and not isinstance(resources, dict):
                raise BrokerSpecError(f"{field}[{index}].resources must be an object")
            found.append((field, index, container))
    return found


def replace_placeholder(pod_spec: Mapping[str, Any], resource: str) -> Object:
    """A copy of `pod_spec` whose containers ask for `resource` where they say {{PLACEHOLDER}}.

    Both requests and limits of containers and init containers; quantities are kept. Raises
    BrokerSpecError when the spec is not shaped like a PodSpec where this rule needs it to be.
    """
    spec = copy.deepcopy(dict(pod_spec))
    for field, index, container in _containers(spec):
        resources = container.get("resources")
        if resources is None:
            continue
        where = f"{field}[{index}]"
        for kind in ("requests", "limits"):
            replaced = _replace_in(resources.get(kind), f"{where}.resources.{kind}", resource)
            if replaced is not None:
                resources[kind] = replaced
    return spec


CLAIM_PREFIX = "akri-slot-"
"""Names of a DRA-mode broker's pod claims, `akri-slot-<k>`, one slot of its Instance each."""


def _slots_asked(container: Object, where: str) -> int:
    """How many slots a container asks through {{PLACEHOLDER}} (limits, else requests)."""
    resources = container.get("resources") or {}
    asked = 0
    for kind in ("requests", "limits"):
        listed = resources.get(kind)
        if listed is not None and not isinstance(listed, dict):
            raise BrokerSpecError(f"{where}.resources.{kind} must be a map of resource names")
        if listed and naming.PLACEHOLDER in listed:
            quantity = str(listed.pop(naming.PLACEHOLDER))
            if not quantity.isdigit() or int(quantity) < 1:
                raise BrokerSpecError(f"{where} asks {quantity!r} slots: not a positive integer")
            asked = int(quantity)  # limits come last and win, as for extended resources
    return asked


def claim_placeholder(pod_spec: Mapping[str, Any], template: str) -> Object:
    """DRA mode: a copy of `pod_spec` whose containers get their {{PLACEHOLDER}} slots as
    claims made from the Instance's ResourceClaimTemplate `template` (one slot each).

    Slots are counted as the kubelet's device manager counts devices: app containers get
    their own, init containers reuse the first ones, so a pod needs the larger of the app
    containers' sum and the largest init container's number (docs/design.md §8a).
    """
    spec = copy.deepcopy(dict(pod_spec))
    app_next, needed = 0, 0
    for field, index, container in _containers(spec):
        asked = _slots_asked(container, f"{field}[{index}]")
        if not asked:
            continue
        first = app_next if field == "containers" else 0
        if field == "containers":
            app_next += asked
        needed = max(needed, first + asked)
        claims = [{"name": f"{CLAIM_PREFIX}{k}"} for k in range(first, first + asked)]
        resources = container["resources"]
        resources["claims"] = [*(resources.get("claims") or []), *claims]
        for kind in ("requests", "limits"):
            if kind in resources and not resources[kind]:
                del resources[kind]
    if needed:
        made = [
            {"name": f"{CLAIM_PREFIX}{k}", "resourceClaimTemplateName": template}
            for k in range(needed)
        ]
        spec["resourceClaims"] = [*(spec.get("resourceClaims") or []), *made]
    return spec


def _slots_for(pod_spec: Mapping[str, Any], instance: str, dra: bool) -> Object:
    """The broker's way to its Instance: `akri.sh/<instance>`, or claims in DRA mode."""
    if dra:
        return claim_placeholder(pod_spec, instance)
    return replace_placeholder(pod_spec, naming.resource_name(instance))


def pin_to_node(pod_spec: Object, node: str) -> Object:
    """`pod_spec` (changed in place) allowed only on `node`, whatever affinity it had.

    Required node-selector terms are ORed, so the node requirement is added to each existing
    term rather than as a term of its own (which would let the pod run anywhere a term matches).
    """
    requirement = {"key": "metadata.name", "operator": "In", "values": [node]}
    affinity = pod_spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    terms = required.get("nodeSelectorTerms") or [{}]
    required["nodeSelectorTerms"] = [
        {**term, "matchFields": [*(term.get("matchFields") or []), requirement]} for term in terms
    ]
    return pod_spec


def _metadata(
    name: str, namespace: str, labels: Mapping[str, str], owner: Resource, digest: str
) -> Object:
    return {
        "name": name,
        "namespace": namespace,
        "labels": dict(labels),
        "annotations": {SPEC_HASH_ANNOTATION: digest},
        "ownerReferences": [owner.owner_reference().model_dump(by_alias=True, exclude_none=True)],
    }


def broker_pod(
    configuration: Configuration, instance: Instance, node: str, *, dra: bool = False
) -> Object | None:
    """The broker Pod of `instance` on `node`; None when the Configuration deploys no Pods.

    Its digest covers the Instance's brokerProperties too: they reach the broker only as env
    vars at Allocate, so a change must restart (roll) the broker to take effect.
    """
    broker = configuration.spec.broker_spec
    if broker is None or broker.broker_pod_spec is None:
        return None
    name = _name(instance)
    spec = pin_to_node(_slots_for(broker.broker_pod_spec, name, dra), node)
    digest = spec_hash(spec, instance.spec.broker_properties)
    pod_name = naming.broker_pod_name(name, node, instance.spec.shared)
    labels = broker_labels(instance, node)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _metadata(pod_name, _namespace(instance), labels, instance, digest),
        "spec": spec,
    }


def broker_job(
    configuration: Configuration, instance: Instance, *, dra: bool = False
) -> Object | None:
    """The broker Job of `instance` for the Configuration's current generation, or None."""
    broker = configuration.spec.broker_spec
    if broker is None or broker.broker_job_spec is None:
        return None
    name = _name(instance)
    spec = copy.deepcopy(broker.broker_job_spec)
    template = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise BrokerSpecError("the broker job spec needs a template with a pod spec")
    template["spec"] = _slots_for(template["spec"], name, dra)
    template_metadata = template.setdefault("metadata", {})
    template_metadata["labels"] = {
        **(template_metadata.get("labels") or {}),
        **broker_labels(instance),
    }
    digest = spec_hash(spec, instance.spec.broker_properties)
    job_name = naming.broker_job_name(name, configuration.metadata.generation or 0)
    labels = broker_labels(instance)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata(job_name, _namespace(instance), labels, instance, digest),
        "spec": spec,
    }


def _service(
    service_spec: Mapping[str, Any],
    name: str,
    namespace: str,
    selector: Mapping[str, str],
    owner: Resource,
) -> Object:
    spec = copy.deepcopy(dict(service_spec))
    user_selector = spec.get("selector") or {}
    if not isinstance(user_selector, dict):
        raise BrokerSpecError("a service spec's selector must be a map")
    spec["selector"] = {**user_selector, **selector}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(name, namespace, selector, owner, spec_hash(spec)),
        "spec": spec,
    }


def instance_service(configuration: Configuration, instance: Instance) -> Object | None:
    """`<instance>-svc` selecting the Instance's brokers, when the Configuration asks for it."""
    if configuration.spec.instance_service_spec is None:
        return None
    name = _name(instance)
    selector = {
        naming.LABEL_INSTANCE: name,
        naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
    }
    return _service(
        configuration.spec.instance_service_spec,
        naming.instance_service_name(name),
        _namespace(instance),
        selector,
        instance,
    )


def configuration_service(configuration: Configuration) -> Object | None:
    """`<configuration>-svc` selecting the brokers of all its Instances, when asked for."""
    if configuration.spec.configuration_service_spec is None:
        return None
    name = _name(configuration)
    selector = {
        naming.LABEL_CONFIGURATION: name,
        naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
    }
    return _service(
        configuration.spec.configuration_service_spec,
        naming.configuration_service_name(name),
        _namespace(configuration),
        selector,
        configuration,
    )


def built_hash(obj: Mapping[str, Any]) -> str | None:
    """The digest an existing object was built with (None: not built by this controller)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(SPEC_HASH_ANNOTATION)
    return value if isinstance(value, str) else None


def updated_service(existing: Mapping[str, Any], desired: Mapping[str, Any]) -> Object:
    """`existing` rewritten to `desired`, keeping what the API server allocated (cluster IPs).

    An update rather than delete-and-create keeps the Service's address stable for clients.
    """
    spec = dict(desired["spec"])
    for allocated in ("clusterIP", "clusterIPs"):
        if allocated not in spec and allocated in existing.get("spec", {}):
            spec[allocated] = existing["spec"][allocated]
    metadata = {**existing["metadata"], **desired["metadata"]}
    return {**desired, "metadata": metadata, "spec": spec}


def is_running(pod: Mapping[str, Any]) -> bool:
    """A broker that serves: Running and not on its way out."""
    phase = (pod.get("status") or {}).get("phase")
    return phase == POD_RUNNING and not pod["metadata"].get("deletionTimestamp")
