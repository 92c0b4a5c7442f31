"""How every program reaches the API server: a kubeconfig when given, else in-cluster."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from kubernetes_asyncio import client, config


async def api_client(kubeconfig: Path | None) -> client.ApiClient:
    """From `kubeconfig` when set, else from the Pod's service account (token and CA)."""
    if kubeconfig is not None:
        loaded: client.ApiClient = await config.new_client_from_config(
            config_file=str(kubeconfig), persist_config=False
        )
        return without_per_request_env(loaded)
    configuration = client.Configuration()
    config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    return without_per_request_env(client.ApiClient(configuration))


def without_per_request_env(api: client.ApiClient) -> client.ApiClient:
    """Read the proxy variables once, as client-go does, instead of on every request.

    kubernetes-asyncio's session trusts the environment, and aiohttp then looks up ~/.netrc
    and the proxy variables in a worker thread before every request: two thread hops per API
    call, each of which can wait for the GIL behind a busy event loop (an Allocate's write
    included). Credentials come from the kubeconfig or the service account, never ~/.netrc;
    so when no proxy applies to the API server the lookups are turned off (when one does,
    the session keeps following the environment).
    """
    url = urlsplit(api.configuration.host or "")
    proxied = url.scheme in getproxies() and not proxy_bypass(url.hostname or "")
    if not proxied:
        api.rest_client.pool_manager._trust_env = False
    return api
