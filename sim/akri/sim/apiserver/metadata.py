"""Server-set metadata: fields only the server writes, times, uids and generated names.

The rules a name, label or owner reference must follow are in `validation.meta`.
"""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any

JSON = dict[str, Any]

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
