"""The API client every program uses: no worker-thread hop per request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.kube.connect import api_client
from akri.sim.apiserver import ApiServer

PROXY_VARIABLES = ("http_proxy", "https_proxy", "no_proxy", "all_proxy")


class CountingExecutor(ThreadPoolExecutor):
    def __init__(self) -> None:
        super().__init__(max_workers=1)
        self.submitted = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.submitted += 1
        return super().submit(fn, *args, **kwargs)


@pytest.fixture
def no_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.mark.usefixtures("no_proxy_variables")
async def test_requests_run_on_the_event_loop_alone(apiserver: ApiServer, tmp_path: Path) -> None:
    executor = CountingExecutor()
    asyncio.get_running_loop().set_default_executor(executor)
    api = await api_client(apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    async with api:
        core = client.CoreV1Api(api)
        for _ in range(3):
            await core.list_namespace()
    assert executor.submitted == 0


@pytest.mark.usefixtures("no_proxy_variables")
async def test_a_proxy_in_the_environment_is_still_followed(
    apiserver: ApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    api = await api_client(apiserver.write_kubeconfig(tmp_path / "kubeconfig"))
    async with api:
        assert api.rest_client.pool_manager.trust_env
