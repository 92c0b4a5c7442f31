"""`resource.k8s.io/v1` (DRA): ResourceSlice, DeviceClass, ResourceClaim and its template,
after pkg/apis/resource/validation/validation.go (the function named on each rule). CEL
selectors are compiled as a real server compiles them, so a broken expression is refused."""

from __future__ import annotations

import re
from typing import Any

import celpy
from celpy.celparser import CELParseError

from akri.sim.apiserver.validation import core, field, names
from akri.sim.apiserver.validation.field import Problems, as_dict, as_list
from akri.sim.apiserver.validation.meta import labels

JSON = dict[str, Any]

MAX_DEVICES = 128  # resource.ResourceSliceMaxDevices
MAX_DEVICES_ADVANCED = 64  # resource.ResourceSliceMaxDevicesWithAdvancedFeatures
MAX_ATTRIBUTES_AND_CAPACITIES = 32  # resource.ResourceSliceMaxAttributesAndCapacitiesPerDevice
MAX_ID_LENGTH = 32  # resource.DeviceMaxIDLength
MAX_STRING_VALUE = 64  # resource.DeviceAttributeMaxValueLength
POOL_NAME_MAX = 253  # resource.PoolNameMaxLength
ALLOCATION_MODES = ("All", "ExactCount")
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
_SLICE_NODE_SELECTION = "`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`"
_DEVICE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
_ATTRIBUTE_TYPES = ("int", "bool", "string", "version", "ints", "bools", "strings", "versions")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?"
    r"(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$"
)


# ---- ResourceSlice ---------------------------------------------------------------------------


def _flag(spec: JSON, key: str, path: str, set_fields: list[str], problems: Problems) -> None:
    """A `*bool` node selection field: true counts, false is refused, absent is nothing."""
    if key not in spec or spec[key] is None:
        return
    if spec[key] is True:
        set_fields.append(f"`{key}`")
    else:
        problems.append(
            field.invalid(f"{path}.{key}", spec[key], "must be either unset or set to true")
        )


def resource_slice(obj: JSON) -> Problems:
    """validateResourceSliceSpec."""
    spec = as_dict(obj.get("spec"))
    problems: Problems = []
    driver = str(spec.get("driver") or "")
    if not driver:
        problems.append(field.required("spec.driver"))
    else:
        problems += field.each("spec.driver", names.dns1123_subdomain(driver.lower()), driver)
    problems += _pool(as_dict(spec.get("pool")), "spec.pool")
    set_fields: list[str] = []
    if spec.get("nodeName"):
        set_fields.append("`nodeName`")
        node = str(spec["nodeName"])
        problems += field.each("spec.nodeName", names.dns1123_subdomain(node), node)
    if spec.get("nodeSelector") is not None:
        set_fields.append("`nodeSelector`")
        selector = as_dict(spec["nodeSelector"])
        problems += core.node_selector(selector, "spec.nodeSelector")
        terms = as_list(selector.get("nodeSelectorTerms"))
        if len(terms) > 1:
            problems.append(
                field.invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    [_go_term(t) for t in terms],
                    "must have exactly one node selector term",
                )
            )
    _flag(spec, "allNodes", "spec", set_fields, problems)
    _flag(spec, "perDeviceNodeSelection", "spec", set_fields, problems)
    if not set_fields:
        problems.append(
            field.required("spec", f"exactly one of {_SLICE_NODE_SELECTION} is required")
        )
    elif len(set_fields) > 1:
        problems.append(
            field.invalid(
                "spec",
                "{" + ", ".join(set_fields) + "}",
                f"exactly one of {_SLICE_NODE_SELECTION} is required, but multiple fields are set",
            )
        )
    devices = as_list(spec.get("devices"))
    advanced = any(as_dict(d).get("taints") or as_dict(d).get("consumesCounters") for d in devices)
    limit = MAX_DEVICES_ADVANCED if advanced else MAX_DEVICES
    if len(devices) > limit:
        problems.append(field.too_many("spec.devices", len(devices), limit))
    per_device = spec.get("perDeviceNodeSelection") is True
    seen: set[str] = set()
    for index, device in enumerate(devices):
        device, where = as_dict(device), f"spec.devices[{index}]"
        problems += _device(device, where, per_device)
        name = str(device.get("name") or "")
        if name in seen:
            problems.append(field.duplicate(where, name))
        seen.add(name)
    return problems


def _go_term(term: Any) -> JSON:
    """A node selector term as the internal Go struct prints in a message."""

    def requirements(key: str) -> list[JSON] | None:
        listed = as_list(as_dict(term).get(key))
        if not listed:
            return None
        return [
            {"Key": r.get("key"), "Operator": r.get("operator"), "Values": r.get("values")}
            for r in map(as_dict, listed)
        ]

    return {"MatchExpressions": requirements("matchExpressions"),
            "MatchFields": requirements("matchFields")}  # fmt: skip


def _pool(pool: JSON, path: str) -> Problems:
    """validateResourcePool: a name of `/`-separated DNS subdomains, counts in range."""
    problems: Problems = []
    name = str(pool.get("name") or "")
    if not name:
        problems.append(field.required(f"{path}.name"))
    else:
        if len(name) > POOL_NAME_MAX:
            problems.append(
                (f"{path}.name", f"Too long: may not be more than {POOL_NAME_MAX} bytes")
            )
        for part in name.split("/"):
            problems += field.each(f"{path}.name", names.dns1123_subdomain(part), part)
    count = pool.get("resourceSliceCount") or 0
    if count <= 0:
        problems.append(
            field.invalid(f"{path}.resourceSliceCount", count, "must be greater than zero")
        )
    generation = pool.get("generation") or 0
    if generation < 0:
        problems.append(
            field.invalid(f"{path}.generation", generation, "must be greater than or equal to zero")
        )
    return problems


def _device(device: JSON, path: str, per_device: bool) -> Problems:
    """validateDevice."""
    name = str(device.get("name") or "")
    problems = field.each(f"{path}.name", names.dns1123_label(name), name)
    attributes, capacity = as_dict(device.get("attributes")), as_dict(device.get("capacity"))
    total = len(attributes) + len(capacity)
    if total > MAX_ATTRIBUTES_AND_CAPACITIES:
        problems.append(
            field.invalid(
                path,
                total,
                "the total number of attributes and capacities must not exceed "
                f"{MAX_ATTRIBUTES_AND_CAPACITIES}",
            )
        )
    for key, attribute in attributes.items():
        problems += _qualified_name(key, f"{path}.attributes")
        problems += _attribute(as_dict(attribute), f"{path}.attributes[{key}]")
    multiple = device.get("allowMultipleAllocations") is True
    for key, value in capacity.items():
        problems += _qualified_name(key, f"{path}.capacity")
        if not multiple and as_dict(value).get("requestPolicy") is not None:
            problems.append(
                field.forbidden(
                    f"{path}.capacity[{key}].requestPolicy", "allowMultipleAllocations must be true"
                )
            )
    for index, taint in enumerate(as_list(device.get("taints"))):
        problems += _taint(as_dict(taint), f"{path}.taints[{index}]")
    problems += _device_nodes(device, path, per_device)
    return problems


def _qualified_name(key: str, path: str) -> Problems:
    """validateQualifiedName: `[domain/]id`, the id a C identifier of at most 32 bytes."""
    domain, _, identifier = key.rpartition("/")
    problems: Problems = []
    if domain:
        problems += field.each(path, names.dns1123_subdomain(domain), domain)
    if not identifier:
        return [*problems, field.required(path, "name required")]
    problems += field.each(path, names.c_identifier(identifier), identifier)
    if len(identifier) > MAX_ID_LENGTH:
        problems.append(field.too_long(path, MAX_ID_LENGTH))
    return problems


def _attribute(attribute: JSON, path: str) -> Problems:
    """validateDeviceAttribute: exactly one typed value; strings at most 64 bytes; versions
    semantic."""
    present = [t for t in _ATTRIBUTE_TYPES if t in attribute and attribute[t] is not None]
    if len(present) != 1:
        return [
            field.invalid(
                path, "" if not present else field.OMIT, "exactly one value must be specified"
            )
        ]
    kind, value = present[0], attribute[present[0]]
    if kind == "string" and len(str(value).encode()) > MAX_STRING_VALUE:
        return [field.too_long(f"{path}.string", MAX_STRING_VALUE)]
    if kind == "version" and not _SEMVER.match(str(value)):
        return [
            field.invalid(
                f"{path}.version", value, "must be a string compatible with semver.org spec 2.0.0"
            )
        ]
    return []


def _taint(taint: JSON, path: str) -> Problems:
    """validateDeviceTaint."""
    key = str(taint.get("key") or "")
    problems = field.each(f"{path}.key", names.qualified_name(key), key)
    value = str(taint.get("value") or "")
    if len(value) > 63:
        problems.append(field.invalid(f"{path}.value", value, "must be no more than 63 bytes"))
    effect = taint.get("effect")
    if not effect:
        problems.append(field.required(f"{path}.effect"))
    elif effect not in TAINT_EFFECTS:
        problems.append(field.not_supported(f"{path}.effect", effect, TAINT_EFFECTS))
    return problems


def _device_nodes(device: JSON, path: str, per_device: bool) -> Problems:
    """validateDevice's node selection: exactly one per device in a slice with
    perDeviceNodeSelection, none in any other slice."""
    chosen = [k for k in ("nodeName", "nodeSelector", "allNodes") if device.get(k) is not None]
    if not per_device:
        if not chosen:
            return []
        return [
            field.invalid(
                path,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        ]
    problems: Problems = []
    set_fields: list[str] = []
    if "nodeName" in chosen:
        node = str(device["nodeName"])
        if node:
            set_fields.append("`nodeName`")
            problems += field.each(f"{path}.nodeName", names.dns1123_subdomain(node), node)
        else:
            problems.append(field.invalid(f"{path}.nodeName", "", "must not be empty"))
    if "nodeSelector" in chosen:
        set_fields.append("`nodeSelector`")
        problems += core.node_selector(device["nodeSelector"], f"{path}.nodeSelector")
    _flag(device, "allNodes", path, set_fields, problems)
    if not set_fields:
        problems.append(field.required(path, _DEVICE_NODE_SELECTION))
    elif len(set_fields) > 1:
        problems.append(
            field.invalid(path, "{" + ", ".join(set_fields) + "}", _DEVICE_NODE_SELECTION)
        )
    return problems


# ---- CEL selectors ---------------------------------------------------------------------------


def _selectors(selectors: Any, path: str) -> Problems:
    """validateSelector: each a CEL expression that compiles."""
    problems: Problems = []
    for index, selector in enumerate(as_list(selectors)):
        where = f"{path}[{index}]"
        cel = as_dict(selector).get("cel")
        if cel is None:
            problems.append(field.required(f"{where}.cel"))
            continue
        expression = str(as_dict(cel).get("expression") or "")
        if not expression:
            problems.append(field.required(f"{where}.cel.expression"))
            continue
        try:
            environment = celpy.Environment()
            environment.compile(expression)
        except CELParseError as error:
            problems.append(
                field.invalid(f"{where}.cel.expression", expression, f"compilation failed: {error}")
            )
    return problems


# ---- DeviceClass, ResourceClaim, ResourceClaimTemplate ---------------------------------------


def device_class(obj: JSON) -> Problems:
    """ValidateDeviceClass: selectors, and an extended resource name outside kubernetes.io."""
    spec = as_dict(obj.get("spec"))
    problems = _selectors(spec.get("selectors"), "spec.selectors")
    name = spec.get("extendedResourceName")
    if name is not None and not _extended_resource_name(str(name)):
        problems.append(
            field.invalid(
                "spec.extendedResourceName", name, "must be a valid extended resource name"
            )
        )
    return problems


def _extended_resource_name(name: str) -> bool:
    """IsExtendedResourceName: a qualified name with a domain that is not kubernetes.io's, no
    `requests.` prefix, and valid as `requests.<name>` too."""
    domain, _, _ = name.partition("/")
    if "/" not in name or domain == "kubernetes.io" or domain.endswith(".kubernetes.io"):
        return False
    if name.startswith("requests."):
        return False
    return not names.qualified_name(name) and not names.qualified_name(f"requests.{name}")


def _claim_spec(spec: JSON, path: str) -> Problems:
    """validateDeviceClaim: requests with unique DNS-label names, each `exactly` one kind."""
    problems: Problems = []
    seen: set[str] = set()
    devices = as_dict(spec.get("devices"))
    for index, request in enumerate(as_list(devices.get("requests"))):
        request, where = as_dict(request), f"{path}.devices.requests[{index}]"
        name = str(request.get("name") or "")
        problems += field.each(f"{where}.name", names.dns1123_label(name), name)
        exactly, first = request.get("exactly"), as_list(request.get("firstAvailable"))
        if exactly is None and not first:
            problems.append(
                field.required(where, "exactly one of `exactly` or `firstAvailable` is required")
            )
        elif exactly is not None and first:
            problems.append(
                field.invalid(
                    where,
                    None,
                    "exactly one of `exactly` or `firstAvailable` is required, but multiple "
                    "fields are set",
                )
            )
        elif exactly is not None:
            problems += _exact_request(as_dict(exactly), f"{where}.exactly")
        if name in seen:
            problems.append(field.duplicate(where, name))
        seen.add(name)
    return problems


def _exact_request(request: JSON, path: str) -> Problems:
    """validateExactDeviceRequest and validateDeviceAllocationMode."""
    problems: Problems = []
    class_name = str(request.get("deviceClassName") or "")
    if not class_name:
        problems.append(field.required(f"{path}.deviceClassName"))
    else:
        problems += field.each(
            f"{path}.deviceClassName", names.dns1123_subdomain(class_name), class_name
        )
    problems += _selectors(request.get("selectors"), f"{path}.selectors")
    mode = request.get("allocationMode") or "ExactCount"
    count = request.get("count")
    if mode == "All":
        if count:
            problems.append(
                field.invalid(
                    f"{path}.count", count, "must not be specified when allocationMode is 'All'"
                )
            )
    elif mode == "ExactCount":
        if count is not None and count < 0:  # 0 (or none) is defaulted to 1
            problems.append(field.invalid(f"{path}.count", count, "must be greater than zero"))
    else:
        problems.append(field.not_supported(f"{path}.allocationMode", mode, ALLOCATION_MODES))
    return problems


def resource_claim(obj: JSON) -> Problems:
    """ValidateResourceClaim's spec."""
    return _claim_spec(as_dict(obj.get("spec")), "spec")


def resource_claim_template(obj: JSON) -> Problems:
    """ValidateResourceClaimTemplate: the claims' labels and spec."""
    template = as_dict(obj.get("spec"))
    problems = labels(as_dict(template.get("metadata")).get("labels"), "spec.metadata.labels")
    return problems + _claim_spec(as_dict(template.get("spec")), "spec.spec")


def immutable_spec(old: JSON, new: JSON) -> Problems:
    """ValidateResourceClaimUpdate and ValidateResourceClaimTemplateUpdate: the spec is fixed."""
    if old.get("spec") == new.get("spec"):
        return []
    return [field.invalid("spec", field.OMIT, "field is immutable")]
