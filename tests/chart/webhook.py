"""The chart's validating webhook seen from kubectl: a bad Configuration refused at apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.kubectl import Kubectl
from tests.support import eventually

CONTROLLERS = "app.kubernetes.io/component=controller"
REFUSED_WITHIN_S = 30.0


async def refused_at_apply(kubectl: Kubectl, tmp_path: Path) -> None:
    """The controller's webhook, through its Service and over the certificate it made, refuses
    bad discoveryDetails. Until it serves, the API refuses every Configuration ("failed
    calling webhook": the chart's failurePolicy is Fail), so only the handler's own words
    count as the webhook's refusal."""
    bad = tmp_path / "bad.json"
    handler = {"name": "debugEcho", "discoveryDetails": "descriptions: a"}
    bad.write_text(
        json.dumps({
            "apiVersion": "akri.sh/v0",
            "kind": "Configuration",
            "metadata": {"name": "bad-echo"},
            "spec": {"discoveryHandler": handler},
        })
    )  # fmt: skip

    async def refused() -> bool:
        code, _, err = await kubectl.result("apply", "-f", str(bad), "--dry-run=server")
        return code != 0 and "descriptions: Input should be a valid list" in err

    try:
        await eventually(refused, "the webhook to refuse bad discoveryDetails", REFUSED_WITHIN_S)
    except pytest.fail.Exception:  # say why: the controllers' own account of their webhook
        _, logs, _ = await kubectl.result("logs", "-l", CONTROLLERS, "--prefix", "--tail", "40")
        pytest.fail(f"the webhook never refused bad discoveryDetails; the controllers:\n{logs}")
