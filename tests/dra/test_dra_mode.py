"""`auto` picks DRA only where the API serves resource.k8s.io/v1 and the kubelet offers DRA
plugin registration; the explicit modes are taken as given."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes_asyncio import config

from akri.dra.mode import Mode, resolve
from akri.sim.apiserver import ApiServer


@pytest.mark.parametrize(
    ("dra_api", "registry", "expected"),
    [
        (True, True, Mode.DRA),
        (True, False, Mode.DEVICE_PLUGIN),
        (False, True, Mode.DEVICE_PLUGIN),
        (False, False, Mode.DEVICE_PLUGIN),
    ],
)
async def test_auto_mode(tmp_path: Path, dra_api: bool, registry: bool, expected: Mode) -> None:
    plugins_registry = tmp_path / "plugins_registry"
    if registry:
        plugins_registry.mkdir()
    async with ApiServer(dra=dra_api) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        api = await config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)
        async with api:
            assert await resolve(Mode.AUTO, api, plugins_registry) is expected
            # The controller has no kubelet: only the API decides.
            controller = Mode.DRA if dra_api else Mode.DEVICE_PLUGIN
            assert await resolve(Mode.AUTO, api) is controller
            for explicit in (Mode.DRA, Mode.DEVICE_PLUGIN):
                assert await resolve(explicit, api, plugins_registry) is explicit
