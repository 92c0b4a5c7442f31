"""The `akri-controller` process: settings from the environment, probes, graceful SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import Awaitable
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client

from akri.controller import main as entry
from akri.controller.settings import ControllerSettings, load_settings
from akri.settings import SettingsError
from akri.sim.apiserver import ApiServer
from tests.support import eventually


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_durations_take_units_and_tuning_follows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_GRACE", "2m")
    monkeypatch.setenv("PENDING_GRACE", "1.5s")
    monkeypatch.setenv("BROKER_BACKOFF_INITIAL", "250ms")
    monkeypatch.setenv("AKRI_NAMESPACE", "edge")
    settings = load_settings()
    tuning = settings.tuning()
    assert (tuning.node_grace, tuning.pending_grace, tuning.backoff_initial) == (120, 1.5, 0.25)
    assert tuning.namespace == "edge"
    assert settings.lease_timing().duration == 15.0


@pytest.mark.parametrize(
    ("variable", "value", "complaint"),
    [
        ("NODE_GRACE", "soon", "NODE_GRACE: 'soon' is not a duration"),
        ("PENDING_GRACE", "0", "PENDING_GRACE"),
        ("METRICS_PORT", "70000", "METRICS_PORT"),
        ("LEASE_RENEW_DEADLINE", "20s", "lease timing"),
        ("BROKER_BACKOFF_INITIAL", "10m", "must not exceed BROKER_BACKOFF_MAX"),
    ],
)
def test_bad_settings_exit_2_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    complaint: str,
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(SettingsError, match=complaint):
        load_settings()
    assert entry.main([]) == entry.EXIT_SETTINGS
    assert complaint in capsys.readouterr().err


async def test_serves_probes_leads_and_stops_on_sigterm(
    apiserver: ApiServer, api: client.ApiClient, tmp_path: Path
) -> None:
    port = free_port()
    settings = ControllerSettings(
        kubeconfig=apiserver.write_kubeconfig(tmp_path / "kubeconfig"),
        metrics_port=port,
        lease_duration=3.0,
        lease_renew_interval=0.5,
        lease_renew_deadline=2.0,
        lease_retry_interval=0.2,
    )
    task = asyncio.create_task(entry.run(settings))
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as session:

        async def ok(path: str) -> str | None:
            try:
                async with session.get(base + path) as response:
                    return await response.text() if response.status == 200 else None
            except aiohttp.ClientError:
                return None

        await eventually(lambda: ok("/healthz"), "/healthz")
        await eventually(lambda: ok("/readyz"), "/readyz")
        exposition = await eventually(
            lambda: _leading(ok("/metrics")), "the controller to lead and say so"
        )
        assert "# TYPE akri_broker_pod_count gauge" in exposition

    os.kill(os.getpid(), signal.SIGTERM)
    assert await asyncio.wait_for(task, timeout=10) == 0
    lease = await client.CoordinationV1Api(api).read_namespaced_lease("akri-controller", "default")
    assert lease.spec.holder_identity == ""  # released for the next replica


async def _leading(metrics: Awaitable[str | None]) -> str | None:
    text = await metrics
    return text if text and "akri_controller_leader 1.0" in text else None
