"""`batch/v1` Job, after pkg/apis/batch/validation/validation.go (ValidateJob)."""

from __future__ import annotations

from typing import Any

from akri.sim.apiserver.validation import core, field
from akri.sim.apiserver.validation.field import Problems, as_dict

JOB_RESTART_POLICIES = ("OnFailure", "Never")


def job(obj: dict[str, Any]) -> Problems:
    """validateJobSpec: counts not negative, a pod template that does not restart Always."""
    spec = as_dict(obj.get("spec"))
    problems: Problems = []
    for key in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(key)
        if isinstance(value, int) and value < 0:
            problems.append(
                field.invalid(f"spec.{key}", value, "must be greater than or equal to 0")
            )
    template = as_dict(as_dict(spec.get("template")).get("spec"))
    policy = template.get("restartPolicy")
    if not policy:
        problems.append(
            field.required("spec.template.spec.restartPolicy", 'valid values: "OnFailure", "Never"')
        )
    elif policy not in JOB_RESTART_POLICIES:
        problems.append(
            field.not_supported("spec.template.spec.restartPolicy", policy, JOB_RESTART_POLICIES)
        )
    return problems + core.pod_spec(template, "spec.template.spec")
