"""How every program reaches the API server: a kubeconfig when given, else in-cluster."""

from __future__ import annotations

from pathlib import Path

from kubernetes_asyncio import client, config


async def api_client(kubeconfig: Path | None) -> client.ApiClient:
    """From `kubeconfig` when set, else from the Pod's service account (token and CA)."""
    if kubeconfig is not None:
        loaded: client.ApiClient = await config.new_client_from_config(
            config_file=str(kubeconfig), persist_config=False
        )
        return loaded
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return client.ApiClient(configuration)
