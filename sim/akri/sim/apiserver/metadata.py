"""Object metadata rules: names, labels, owner references, server-set fields.

Pure logic. A name or label that a real server refuses must fail here too, or code that builds
names (Instance names, broker pod names) would pass tests and break on a real cluster.
"""

from __future__ import annotations

import datetime
import random
import re
import uuid
from typing import Any

from akri.sim.apiserver.selectors import valid_label_key, valid_label_value

JSON = dict[str, Any]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # no vowels: generated names spell no words
_GENERATED_SUFFIX = 5

# Fields only the server sets; client values are ignored on create and kept on update.
SERVER_FIELDS = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def now() -> str:
    """RFC 3339 with second precision, as metav1.Time serialises."""
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_uid() -> str:
    return str(uuid.uuid4())


def generated_name(prefix: str) -> str:
    prefix = prefix[: 63 - _GENERATED_SUFFIX]
    return prefix + "".join(random.choices(_SUFFIX_ALPHABET, k=_GENERATED_SUFFIX))


def name_errors(name: str, dns_label: bool) -> list[tuple[str, str]]:
    if dns_label:
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return [
                (
                    "metadata.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower '
                    "case alphanumeric characters or '-', and must start and end with an "
                    "alphanumeric character (at most 63 characters)",
                )
            ]
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return [
            (
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower '
                "case alphanumeric characters, '-' or '.', and must start and end with an "
                "alphanumeric character (at most 253 characters)",
            )
        ]
    return []


def metadata_errors(metadata: JSON) -> list[tuple[str, str]]:
    """Label, annotation and owner-reference problems as (field, message) pairs."""
    errors: list[tuple[str, str]] = []
    for key, value in (metadata.get("labels") or {}).items():
        if not valid_label_key(key):
            errors.append(
                ("metadata.labels", f'Invalid value: "{key}": name part must be a valid label key')
            )
        if not isinstance(value, str) or not valid_label_value(value):
            errors.append(
                (
                    "metadata.labels",
                    f'Invalid value: "{value}": a valid label must be an empty string or '
                    "consist of alphanumeric characters, '-', '_' or '.' (at most 63 characters)",
                )
            )
    for key in metadata.get("annotations") or {}:
        if not valid_label_key(key):
            errors.append(
                (
                    "metadata.annotations",
                    f'Invalid value: "{key}": name part must be a valid annotation key',
                )
            )
    for index, reference in enumerate(metadata.get("ownerReferences") or []):
        for required in ("apiVersion", "kind", "name", "uid"):
            if not reference.get(required):
                errors.append((f"metadata.ownerReferences[{index}].{required}", "Required value"))
    controllers = [r for r in metadata.get("ownerReferences") or [] if r.get("controller")]
    if len(controllers) > 1:
        errors.append(
            (
                "metadata.ownerReferences",
                "Invalid value: Only one reference can have Controller set to true",
            )
        )
    return errors
