"""Which resource names a device plugin may register: the kubelet's extended-resource rule."""

from __future__ import annotations

import re

_REQUESTS_PREFIX = "requests."
_NATIVE_NAMESPACE = "kubernetes.io/"
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_MAX_PREFIX = 253
_MAX_NAME = 63


def is_extended_resource_name(name: str) -> bool:
    """True for `domain/name` outside `kubernetes.io` that is also valid as a quota key.

    The kubelet rejects a registration for anything else, so the emulator must too.
    """
    if "/" not in name or _NATIVE_NAMESPACE in name or name.startswith(_REQUESTS_PREFIX):
        return False
    return _is_qualified_name(_REQUESTS_PREFIX + name)


def _is_qualified_name(value: str) -> bool:
    parts = value.split("/")
    if len(parts) > 2:
        return False
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix or len(prefix) > _MAX_PREFIX or not _DNS1123_SUBDOMAIN.fullmatch(prefix):
            return False
    name = parts[-1]
    return 0 < len(name) <= _MAX_NAME and _NAME_PART.fullmatch(name) is not None
