"""`coordination.k8s.io/v1` Lease, after pkg/apis/coordination/validation/validation.go
(ValidateLeaseSpec)."""

from __future__ import annotations

import re
from typing import Any

from akri.sim.apiserver.validation import field
from akri.sim.apiserver.validation.field import Problems, as_dict

_MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$")


def lease(obj: dict[str, Any]) -> Problems:
    """A positive duration, transitions not negative. The times are MicroTime, which the server
    decodes only with six fractional digits: anything else cannot be decoded (ValueError)."""
    spec = as_dict(obj.get("spec"))
    for key in ("acquireTime", "renewTime"):
        value = spec.get(key)
        if isinstance(value, str) and not _MICRO_TIME.match(value):
            raise ValueError(
                f'parsing time "{value}" as "2006-01-02T15:04:05.000000Z07:00": cannot parse '
                f'"{value[19:]}" as ".000000"'
            )
    problems: Problems = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        problems.append(
            field.invalid("spec.leaseDurationSeconds", duration, "must be greater than 0")
        )
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        problems.append(
            field.invalid(
                "spec.leaseTransitions", transitions, "must be greater than or equal to 0"
            )
        )
    return problems
