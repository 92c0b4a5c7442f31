"""Every name and format other Akri components and other nodes depend on (docs/design.md §4).

Pure functions only: the agent, the controller, the CLI and the tests all derive names here,
so a device always maps to the same Instance, resource and broker on every node.
"""

from __future__ import annotations

import hashlib
import re

GROUP = "akri.sh"
VERSION = "v0"
API_VERSION = f"{GROUP}/{VERSION}"
RESOURCE_PREFIX = f"{GROUP}/"
PLACEHOLDER = "{{PLACEHOLDER}}"

LABEL_CONFIGURATION = f"{GROUP}/configuration"
LABEL_INSTANCE = f"{GROUP}/instance"
LABEL_TARGET_NODE = f"{GROUP}/target-node"
LABEL_CONTROLLER = "controller"
CONTROLLER_LABEL_VALUE = GROUP
SLOTS_FINALIZER = f"{GROUP}/slots-in-use"
"""On an Instance while a node holds one of its slots: deleting it waits until none is held."""

MAX_RESOURCE_NAME_PART = 63  # the name part of an extended resource is a qualified name
MAX_OBJECT_NAME = 253  # DNS-1123 subdomain, the limit for metadata.name
MAX_DNS_LABEL = 63  # Pod host names and Service names are DNS-1123 labels
DIGEST_HEX_LENGTH = 6
MAX_CONFIGURATION_NAME = MAX_RESOURCE_NAME_PART - 1 - DIGEST_HEX_LENGTH
"""A Configuration's Instances are `<name>-<digest>`, advertised as `akri.sh/<Instance name>`."""

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NOT_DNS_LABEL_CHAR = re.compile(r"[^a-z0-9-]+")
_NOT_ENV_CHAR = re.compile(r"[^A-Za-z0-9_]")


def digest(data: str) -> str:
    """Six lowercase hex characters: BLAKE2b with a 3-byte digest, as Akri computes it."""
    return hashlib.blake2b(data.encode(), digest_size=3).hexdigest()


def device_digest(device_id: str, node: str | None = None) -> str:
    """Digest of a device: its id alone when shared, id immediately followed by node when local."""
    return digest(device_id if node is None else device_id + node)


def instance_name(configuration: str, device_id: str, node: str | None = None) -> str:
    """`<configuration>-<digest>`; pass `node` for a non-shared (node-local) device."""
    return f"{configuration}-{device_digest(device_id, node)}"


def instance_digest(instance: str) -> str:
    """The digest suffix of an Instance name (used to suffix its env vars)."""
    return instance.rsplit("-", 1)[-1]


def resource_name(name: str) -> str:
    """Extended resource `akri.sh/<name>`: of an Instance (instance level) or of a Configuration
    (configuration level)."""
    return RESOURCE_PREFIX + name


def slot_id(instance: str, index: int) -> str:
    """Instance-level virtual device id, also the key in `deviceUsage`."""
    return f"{instance}-{index}"


def slot_ids(instance: str, capacity: int) -> list[str]:
    return [slot_id(instance, i) for i in range(capacity)]


def slot_index(instance: str, slot: str) -> int | None:
    """Index of `slot` in `instance`, or None when it is not one of its slot ids."""
    # Called for every deviceUsage key on every Instance change: no string is built to compare.
    n = len(instance)
    if len(slot) <= n + 1 or slot[n] != "-" or not slot.startswith(instance):
        return None
    tail = slot[n + 1 :]
    canonical = tail.isascii() and tail.isdigit() and (tail == "0" or tail[0] != "0")
    return int(tail) if canonical else None


def configuration_level_device_id(configuration: str, n: int) -> str:
    """Configuration-level virtual device id `<configuration>-<n>`."""
    return f"{configuration}-{n}"


def configuration_level_device_index(configuration: str, device_id: str) -> int | None:
    """`n` of a configuration-level id, or None when the id is not of this Configuration."""
    return slot_index(configuration, device_id)


def property_env_name(key: str, instance: str) -> str:
    """Env var of one device property, suffixed so several devices can share one container."""
    return f"{key}_{instance_digest(instance).upper()}"


def is_env_name(name: str) -> bool:
    """Whether `name` is a portable env var name; the agent drops others with a warning."""
    return bool(_ENV_NAME.match(name))


def env_suffix(text: str) -> str:
    """`text` (a TXT key, a stream profile) as the end of an env var name: upper case, `_` for
    every other character."""
    return _NOT_ENV_CHAR.sub("_", text).upper()


def object_name_problem(name: str, kind: str = "an object") -> str | None:
    """Why `name` cannot be a Configuration's, Instance's or Node's name, or None when it can."""
    if len(name) > MAX_OBJECT_NAME or not _DNS_SUBDOMAIN.match(name):
        return (
            f"{name!r} is not {kind} name (lowercase DNS-1123 subdomain: a-z, 0-9, '-' "
            f"and '.', starting and ending alphanumeric, at most {MAX_OBJECT_NAME} characters)"
        )
    return None


def resource_name_problem(name: str) -> str | None:
    """Why `akri.sh/<name>` cannot be an extended resource name, or None when it can."""
    if len(name) > MAX_RESOURCE_NAME_PART:
        return (
            f"resource name part {name!r} is {len(name)} characters, "
            f"the limit is {MAX_RESOURCE_NAME_PART}"
        )
    if not _QUALIFIED_NAME.match(name):
        return f"resource name part {name!r} is not a qualified name"
    return None


def configuration_name_problem(configuration: str) -> str | None:
    """Why Instances of `configuration` could not be named or advertised, or None when they can."""
    instance = f"{configuration}-{'0' * DIGEST_HEX_LENGTH}"
    return resource_name_problem(configuration) or resource_name_problem(instance)


def dns_label(name: str, max_length: int = MAX_DNS_LABEL) -> str:
    """`name` as a DNS-1123 label; over-long or altered names keep a digest of the original."""
    label = _NOT_DNS_LABEL_CHAR.sub("-", name.lower()).strip("-")
    if label == name and len(label) <= max_length:
        return label
    suffix = digest(name)
    head = label[: max_length - len(suffix) - 1].rstrip("-")
    return f"{head}-{suffix}" if head else suffix


def broker_pod_name(instance: str, node: str, shared: bool) -> str:
    """`<instance>-<node>-pod` for shared devices, `<instance>-pod` for local ones."""
    return dns_label(f"{instance}-{node}-pod" if shared else f"{instance}-pod")


def broker_job_name(instance: str, generation: int) -> str:
    return dns_label(f"{instance}-{generation}-job")


def instance_service_name(instance: str) -> str:
    return dns_label(f"{instance}-svc")


def configuration_service_name(configuration: str) -> str:
    return dns_label(f"{configuration}-svc")
