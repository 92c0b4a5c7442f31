"""The core (`v1`) kinds the product and its chart write: Pod specs (also inside Job and
workload templates), node selectors, Service, ConfigMap, Secret and Event, after
pkg/apis/core/validation/validation.go (the function named on each rule)."""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.validation import field, names
from akri.sim.apiserver.validation.field import Problems, as_dict, as_list
from akri.sim.apiserver.validation.meta import labels

JSON = dict[str, Any]

PORT_MAX = 65535
_PORT_RANGE = f"must be between 1 and {PORT_MAX}, inclusive"
PROTOCOLS = ("SCTP", "TCP", "UDP")


# ---- node selectors ------------------------------------------------------------------------


def node_selector(selector: Any, path: str) -> Problems:
    """ValidateNodeSelector: at least one term, each valid (an empty term is allowed)."""
    terms = as_list(as_dict(selector).get("nodeSelectorTerms"))
    if not terms:
        return [
            field.required(f"{path}.nodeSelectorTerms", "must have at least one node selector term")
        ]
    problems: Problems = []
    for index, term in enumerate(terms):
        problems += node_selector_term(term, f"{path}.nodeSelectorTerms[{index}]")
    return problems


def node_selector_term(term: Any, path: str) -> Problems:
    """ValidateNodeSelectorTerm: label expressions and node field expressions."""
    problems: Problems = []
    for index, requirement in enumerate(as_list(as_dict(term).get("matchExpressions"))):
        problems += _label_requirement(as_dict(requirement), f"{path}.matchExpressions[{index}]")
    for index, requirement in enumerate(as_list(as_dict(term).get("matchFields"))):
        problems += _field_requirement(as_dict(requirement), f"{path}.matchFields[{index}]")
    return problems


def _label_requirement(requirement: JSON, path: str) -> Problems:
    """ValidateNodeSelectorRequirement."""
    problems: Problems = []
    operator, values = requirement.get("operator"), as_list(requirement.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            problems.append(
                field.required(
                    f"{path}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            problems.append(
                field.forbidden(
                    f"{path}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            problems.append(
                field.required(
                    f"{path}.values",
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                )
            )
    else:
        problems.append(
            field.invalid(f"{path}.operator", operator, "not a valid selector operator")
        )
    key = str(requirement.get("key") or "")
    return problems + field.each(f"{path}.key", names.qualified_name(key), key)


def _field_requirement(requirement: JSON, path: str) -> Problems:
    """ValidateNodeFieldSelectorRequirement: `metadata.name` only, one value for In/NotIn (a
    node is matched by its one name, so several names need several terms)."""
    problems: Problems = []
    operator, values = requirement.get("operator"), as_list(requirement.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            problems.append(
                field.required(
                    f"{path}.values",
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field "
                    "selector",
                )
            )
    else:
        problems.append(
            field.invalid(f"{path}.operator", operator, "not a valid selector operator")
        )
    key = requirement.get("key")
    if key != "metadata.name":
        return [*problems, field.invalid(f"{path}.key", key, "not a valid field selector key")]
    for index, value in enumerate(values):
        problems += field.each(
            f"{path}.values[{index}]", names.dns1123_subdomain(str(value)), value
        )
    return problems


# ---- ports -----------------------------------------------------------------------------------


def port_name(name: str) -> list[str]:
    """IsValidPortName (k8s.io/apimachinery/pkg/util/validation)."""
    messages = []
    if len(name) > 15:
        messages.append("must be no more than 15 characters")
    if not name or any(
        not (c.islower() or c.isdigit() or c == "-") or not c.isascii() for c in name
    ):
        messages.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in name):
        messages.append("must contain at least one letter (a-z)")
    if "--" in name:
        messages.append("must not contain consecutive hyphens (-)")
    if name.startswith("-") or name.endswith("-"):
        messages.append("must not begin or end with a hyphen (-)")
    return messages


def _port_number(value: Any, path: str) -> Problems:
    in_range = isinstance(value, int) and 1 <= value <= PORT_MAX
    return [] if in_range else [field.invalid(path, value, _PORT_RANGE)]


def _protocol(value: Any, path: str) -> Problems:
    if value in (None, ""):
        return [field.required(path)]
    return [] if value in PROTOCOLS else [field.not_supported(path, value, PROTOCOLS)]


def _container_ports(ports: Any, path: str) -> Problems:
    """validateContainerPorts."""
    problems: Problems = []
    seen: set[str] = set()
    for index, port in enumerate(as_list(ports)):
        port, where = as_dict(port), f"{path}[{index}]"
        name = port.get("name")
        if name:
            problems += field.each(f"{where}.name", port_name(str(name)), name)
            if name in seen:
                problems.append(field.duplicate(f"{where}.name", name))
            seen.add(str(name))
        number = port.get("containerPort")
        if not number:
            problems.append(field.required(f"{where}.containerPort"))
        else:
            problems += _port_number(number, f"{where}.containerPort")
        if port.get("hostPort"):
            problems += _port_number(port["hostPort"], f"{where}.hostPort")
        problems += _protocol(port.get("protocol", "TCP"), f"{where}.protocol")
    return problems


# ---- containers ------------------------------------------------------------------------------

_ENV_SOURCES = ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef")
_PROBE_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_LIFECYCLE_HANDLERS = ("exec", "httpGet", "tcpSocket", "sleep")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")


def _env(env: Any, path: str) -> Problems:
    """ValidateEnv and validateEnvVarValueFrom."""
    problems: Problems = []
    for index, variable in enumerate(as_list(env)):
        variable, where = as_dict(variable), f"{path}[{index}]"
        name = str(variable.get("name") or "")
        if not name:
            problems.append(field.required(f"{where}.name"))
        elif any(not (32 <= ord(c) <= 126) or c == "=" for c in name):
            problems.append(
                field.invalid(
                    f"{where}.name",
                    name,
                    "a valid environment variable name must consist only of printable ASCII "
                    "characters other than '='",
                )
            )
        if "valueFrom" not in variable or variable["valueFrom"] is None:
            continue
        sources = [s for s in _ENV_SOURCES if as_dict(variable["valueFrom"]).get(s)]
        if variable.get("value"):
            problems.append(
                field.invalid(
                    f"{where}.valueFrom", "", "may not be specified when `value` is not empty"
                )
            )
        elif not sources:
            problems.append(
                field.invalid(
                    f"{where}.valueFrom",
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef`, "
                    "`secretKeyRef` or `fileKeyRef`",
                )
            )
        elif len(sources) > 1:
            problems.append(
                field.invalid(
                    f"{where}.valueFrom", "", "may not have more than one field specified at a time"
                )
            )
    return problems


def _handler(handler: Any, kinds: tuple[str, ...], path: str) -> Problems:
    """validateHandler: exactly one handler type."""
    present = [k for k in kinds if as_dict(handler).get(k) is not None]
    if not present:
        return [field.required(path, "must specify a handler type")]
    return [
        field.forbidden(f"{path}.{k}", "may not specify more than 1 handler type")
        for k in present[1:]
    ]


def _container(container: JSON, path: str, volumes: set[str], claims: list[str]) -> Problems:
    """validateContainerCommon, without the parts our objects never set."""
    problems: Problems = []
    name = str(container.get("name") or "")
    if not name:
        problems.append(field.required(f"{path}.name"))
    else:
        problems += field.each(f"{path}.name", names.dns1123_label(name), name)
    if not str(container.get("image") or "").strip():
        problems.append(field.required(f"{path}.image"))
    for hook in ("postStart", "preStop"):
        lifecycle = as_dict(container.get("lifecycle"))
        if lifecycle.get(hook) is not None:
            problems += _handler(lifecycle[hook], _LIFECYCLE_HANDLERS, f"{path}.lifecycle.{hook}")
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        if container.get(probe) is not None:
            problems += _handler(container[probe], _PROBE_HANDLERS, f"{path}.{probe}")
    problems += _container_ports(container.get("ports"), f"{path}.ports")
    problems += _env(container.get("env"), f"{path}.env")
    problems += _volume_mounts(container.get("volumeMounts"), f"{path}.volumeMounts", volumes)
    policy = container.get("imagePullPolicy")
    if policy is not None and policy not in PULL_POLICIES:
        problems.append(field.not_supported(f"{path}.imagePullPolicy", policy, PULL_POLICIES))
    return problems + _container_claims(as_dict(container.get("resources")), path, claims)


def _volume_mounts(mounts: Any, path: str, volumes: set[str]) -> Problems:
    """ValidateVolumeMounts: a mount names a (valid) volume of the pod, at a unique path."""
    problems: Problems = []
    paths: set[str] = set()
    for index, mount in enumerate(as_list(mounts)):
        mount, where = as_dict(mount), f"{path}[{index}]"
        name = str(mount.get("name") or "")
        if not name:
            problems.append(field.required(f"{where}.name"))
        elif name not in volumes:
            problems.append(field.not_found(f"{where}.name", name))
        mount_path = str(mount.get("mountPath") or "")
        if not mount_path:
            problems.append(field.required(f"{where}.mountPath"))
        elif mount_path in paths:
            problems.append(field.invalid(f"{where}.mountPath", mount_path, "must be unique"))
        paths.add(mount_path)
    return problems


def _container_claims(resources: JSON, path: str, claims: list[str]) -> Problems:
    """validateResourceClaimNames: a container's claims name the pod's, once each."""
    problems: Problems = []
    seen: set[str] = set()
    for index, claim in enumerate(as_list(resources.get("claims"))):
        name, where = str(as_dict(claim).get("name") or ""), f"{path}.resources.claims[{index}]"
        if not name:
            problems.append(field.required(where))
        elif name in seen:
            problems.append(field.duplicate(where, name))
        elif name not in claims:
            known = f": {', '.join(sorted(claims))}" if claims else " which is empty"
            problems.append(
                field.not_found(
                    where, name, f"must be one of the names in pod.spec.resourceClaims{known}"
                )
            )
        seen.add(name)
    return problems


# ---- pod spec --------------------------------------------------------------------------------

HOST_PATH_TYPES = (
    "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
    "Socket",
)  # fmt: skip
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
TOLERATION_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _volumes(volumes: Any, path: str) -> tuple[Problems, set[str]]:
    """ValidateVolumes: unique DNS-label names; returns the names of the valid volumes."""
    problems: Problems = []
    seen: set[str] = set()
    valid: set[str] = set()
    for index, volume in enumerate(as_list(volumes)):
        volume, where = as_dict(volume), f"{path}[{index}]"
        found: Problems = []
        name = str(volume.get("name") or "")
        if not name:
            found.append(field.required(f"{where}.name"))
        elif name in seen:
            found.append(field.duplicate(f"{where}.name", name))
        host_path = volume.get("hostPath")
        if host_path is not None:
            if not as_dict(host_path).get("path"):
                found.append(field.required(f"{where}.hostPath.path"))
            kind = as_dict(host_path).get("type")
            if kind is not None and kind not in HOST_PATH_TYPES:
                found.append(field.not_supported(f"{where}.hostPath.type", kind, HOST_PATH_TYPES))
        if name and name not in seen:
            found += field.each(f"{where}.name", names.dns1123_label(name), name)
        seen.add(name)
        if not found:
            valid.add(name)
        problems += found
    return problems, valid


def _pod_claims(claims: Any, path: str) -> tuple[Problems, list[str]]:
    """validatePodResourceClaims: unique DNS-label names, each from exactly one source."""
    problems: Problems = []
    listed: list[str] = []
    for index, claim in enumerate(as_list(claims)):
        claim, where = as_dict(claim), f"{path}[{index}]"
        name = str(claim.get("name") or "")
        if name in listed:
            problems.append(field.duplicate(f"{where}.name", name))
        else:
            problems += field.each(f"{where}.name", names.dns1123_label(name), name)
        listed.append(name)
        shown = {
            "Name": name,
            "ResourceClaimName": claim.get("resourceClaimName"),
            "ResourceClaimTemplateName": claim.get("resourceClaimTemplateName"),
        }
        sources = [k for k in ("resourceClaimName", "resourceClaimTemplateName") if claim.get(k)]
        if len(sources) > 1:
            problems.append(
                field.invalid(
                    where,
                    shown,
                    "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                    "specified",
                )
            )
        elif not sources:
            problems.append(
                field.invalid(
                    where,
                    shown,
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                )
            )
    return problems, listed


def _tolerations(tolerations: Any, path: str) -> Problems:
    """validateTolerations."""
    problems: Problems = []
    for index, toleration in enumerate(as_list(tolerations)):
        toleration, where = as_dict(toleration), f"{path}[{index}]"
        key, operator = str(toleration.get("key") or ""), toleration.get("operator") or ""
        if key:
            problems += field.each(f"{where}.key", names.qualified_name(key), key)
        elif operator != "Exists":
            problems.append(
                field.invalid(
                    f"{where}.operator",
                    operator,
                    'operator must be Exists when `key` is empty, which means "match all values '
                    'and all keys"',
                )
            )
        effect = toleration.get("effect") or ""
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            problems.append(
                field.invalid(
                    f"{where}.effect",
                    effect,
                    "effect must be 'NoExecute' when `tolerationSeconds` is set",
                )
            )
        value = str(toleration.get("value") or "")
        if operator in ("", "Equal"):
            problems += field.each(f"{where}.value", names.label_value(value), value)
        elif operator == "Exists":
            if value:
                problems.append(
                    field.invalid(
                        f"{where}.operator",
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    )
                )
        else:
            problems.append(field.not_supported(f"{where}.operator", operator, ("Equal", "Exists")))
        if effect and effect not in TOLERATION_EFFECTS:
            problems.append(field.not_supported(f"{where}.effect", effect, TOLERATION_EFFECTS))
    return problems


def pod_spec(spec: Any, path: str) -> Problems:
    """ValidatePodSpec, for what a pod spec of ours (or a user's broker spec) may hold."""
    spec = as_dict(spec)
    problems, volumes = _volumes(spec.get("volumes"), f"{path}.volumes")
    claim_problems, claims = _pod_claims(spec.get("resourceClaims"), f"{path}.resourceClaims")
    problems += claim_problems
    containers = as_list(spec.get("containers"))
    if not containers:
        problems.append(field.required(f"{path}.containers"))
    for kind in ("initContainers", "containers"):
        for index, container in enumerate(as_list(spec.get(kind))):
            container, where = as_dict(container), f"{path}.{kind}[{index}]"
            problems += _container(container, where, volumes, claims)
            policy = container.get("restartPolicy")
            if kind == "initContainers" and policy is not None and policy != "Always":
                problems.append(
                    field.not_supported(f"{where}.restartPolicy", policy, sorted(RESTART_POLICIES))
                )
    seen: set[str] = set()  # regular containers' names are taken first
    for kind in ("containers", "initContainers"):
        for index, container in enumerate(as_list(spec.get(kind))):
            name = as_dict(container).get("name")
            if name and name in seen:
                problems.append(field.duplicate(f"{path}.{kind}[{index}].name", name))
            seen.add(str(name))
    policy = spec.get("restartPolicy")
    if policy is not None and policy not in RESTART_POLICIES:
        problems.append(field.not_supported(f"{path}.restartPolicy", policy, RESTART_POLICIES))
    dns = spec.get("dnsPolicy")
    if dns is not None and dns not in DNS_POLICIES:
        problems.append(field.not_supported(f"{path}.dnsPolicy", dns, DNS_POLICIES))
    problems += labels(spec.get("nodeSelector"), f"{path}.nodeSelector")
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None and not (isinstance(deadline, int) and 1 <= deadline <= 2**31 - 1):
        problems.append(
            field.invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                "must be between 1 and 2147483647, inclusive",
            )
        )
    if spec.get("hostname"):
        hostname = str(spec["hostname"])
        problems += field.each(f"{path}.hostname", names.dns1123_label(hostname), hostname)
    problems += _tolerations(spec.get("tolerations"), f"{path}.tolerations")
    affinity = as_dict(as_dict(spec.get("affinity")).get("nodeAffinity"))
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        problems += node_selector(
            required, f"{path}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        )
    return problems


def pod(obj: JSON) -> Problems:
    """ValidatePodCreate's spec part (metadata is checked for every kind)."""
    return pod_spec(obj.get("spec"), "spec")


# ---- services --------------------------------------------------------------------------------

SERVICE_TYPES = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES = ("ClientIP", "None")


def service(obj: JSON) -> Problems:
    """ValidateService: ports (named when several, unique), type, affinity and selector."""
    spec = as_dict(obj.get("spec"))
    kind = spec.get("type") or "ClusterIP"
    ports = as_list(spec.get("ports"))
    problems: Problems = []
    if not ports and kind != "ExternalName" and spec.get("clusterIP") != "None":
        problems.append(field.required("spec.ports"))
    names_seen: set[str] = set()
    for index, port in enumerate(ports):
        port, where = as_dict(port), f"spec.ports[{index}]"
        name = str(port.get("name") or "")
        if len(ports) > 1 and not name:
            problems.append(field.required(f"{where}.name"))
        elif name:
            problems += field.each(f"{where}.name", names.dns1123_label(name), name)
            if name in names_seen:
                problems.append(field.duplicate(f"{where}.name", name))
        names_seen.add(name)
        problems += _port_number(port.get("port"), f"{where}.port")
        problems += _protocol(port.get("protocol", "TCP"), f"{where}.protocol")
        target = port.get("targetPort")
        if isinstance(target, str):
            problems += field.each(f"{where}.targetPort", port_name(target), target)
        elif target is not None:
            problems += _port_number(target, f"{where}.targetPort")
    if kind not in SERVICE_TYPES:
        problems.append(field.not_supported("spec.type", kind, SERVICE_TYPES))
    affinity = spec.get("sessionAffinity")
    if affinity is not None and affinity not in SESSION_AFFINITIES:
        problems.append(field.not_supported("spec.sessionAffinity", affinity, SESSION_AFFINITIES))
    problems += labels(spec.get("selector"), "spec.selector")
    taken: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        port = as_dict(port)
        identity = (port.get("port"), port.get("protocol", "TCP"))
        if identity in taken:
            shown = {"Name": "", "Protocol": identity[1], "AppProtocol": None, "Port": identity[0],
                     "TargetPort": 0, "NodePort": 0}  # fmt: skip
            problems.append(field.duplicate(f"spec.ports[{index}]", shown))
        taken.add(identity)
    return problems


# ---- config, secrets, events -----------------------------------------------------------------


def _keys(data: Any, path: str) -> Problems:
    problems: Problems = []
    for key in as_dict(data):
        problems += field.each(f"{path}[{key}]", names.config_key(key), key)
    return problems


def config_map(obj: JSON) -> Problems:
    """ValidateConfigMap: keys of data and binaryData, none in both."""
    problems = _keys(obj.get("data"), "data") + _keys(obj.get("binaryData"), "binaryData")
    for key in as_dict(obj.get("data")):
        if key in as_dict(obj.get("binaryData")):
            problems.append(
                field.invalid(f"data[{key}]", key, "duplicate of key present in binaryData")
            )
    return problems


_SECRET_REQUIRED_KEYS = {
    "kubernetes.io/tls": ("tls.crt", "tls.key"),
    "kubernetes.io/dockerconfigjson": (".dockerconfigjson",),
    "kubernetes.io/dockercfg": (".dockercfg",),
}


def secret(obj: JSON) -> Problems:
    """ValidateSecret: data keys, and the keys a typed Secret must hold."""
    problems = _keys(obj.get("data"), "data")
    data = as_dict(obj.get("data"))
    for key in _SECRET_REQUIRED_KEYS.get(str(obj.get("type") or ""), ()):
        if key not in data:
            problems.append(field.required(f"data[{key}]"))
    return problems


def event(obj: JSON) -> Problems:
    """ValidateEventCreate (legacy core Events): the involved object's namespace is the
    event's own."""
    involved = as_dict(obj.get("involvedObject")).get("namespace")
    namespace = as_dict(obj.get("metadata")).get("namespace")
    if involved and namespace and involved != namespace:
        return [
            field.invalid("involvedObject.namespace", involved, "does not match event.namespace")
        ]
    return []
