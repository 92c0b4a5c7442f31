"""The agent of one node: discovery, Instances, device plugins, slot reclaim, telemetry.

Everything runs in one task group; cancelling `run` stops it all in order (plugins stop serving
and remove their sockets, the registration socket is removed, telemetry stops). The simulator
runs several agents in one process: each gets its own settings (node name, directories,
metrics port 0), a shared API client and its own embedded handlers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence

from kubernetes_asyncio import client, config

from akri.agent import metrics
from akri.agent.configurations import ConfigurationWatcher
from akri.agent.discovery.handler import DiscoveryHandler
from akri.agent.discovery.kube_properties import kube_reader
from akri.agent.discovery.registration import RegistrationServer
from akri.agent.discovery.registry import HandlerRegistry
from akri.agent.instances import InstanceCache
from akri.agent.plugins import Allocations, PluginManager, Reclaimer
from akri.agent.runner import RunnerEnv
from akri.agent.settings import AgentSettings
from akri.agent.status import StatusReporter
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.telemetry import serve_telemetry

log = logging.getLogger(__name__)


def default_handlers(settings: AgentSettings) -> list[DiscoveryHandler]:
    """The embedded handlers the settings ask for."""
    if not settings.debug_echo_enabled:
        return []
    return [
        DebugEcho(
            shared=settings.debug_echo_instances_shared,
            availability_file=settings.debug_echo_availability_file,
        )
    ]


@contextlib.asynccontextmanager
async def kube_client(settings: AgentSettings) -> AsyncIterator[client.ApiClient]:
    """A client from KUBECONFIG, else from the Pod's service account."""
    if settings.kubeconfig is not None:
        api_client = await config.new_client_from_config(
            config_file=str(settings.kubeconfig), persist_config=False
        )
    else:
        configuration = client.Configuration()
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        api_client = client.ApiClient(configuration)
    async with api_client:
        yield api_client


class Agent:
    def __init__(
        self,
        settings: AgentSettings,
        *,
        api_client: client.ApiClient | None = None,
        handlers: Sequence[DiscoveryHandler] | None = None,
    ) -> None:
        """`api_client` is borrowed (not closed); without it one is made from the settings.
        `handlers` replaces the embedded handlers the settings would give."""
        self.settings = settings
        self.registry = HandlerRegistry()
        for handler in default_handlers(settings) if handlers is None else handlers:
            self.registry.add(handler)
        self._api_client = api_client
        self.cache: InstanceCache | None = None
        self.configurations: ConfigurationWatcher | None = None
        self.plugins: PluginManager | None = None

    @property
    def ready(self) -> bool:
        """Both caches hold the API's state (what /readyz reports)."""
        return (
            self.cache is not None
            and self.configurations is not None
            and self.cache.synced.is_set()
            and self.configurations.synced.is_set()
        )

    async def run(self) -> None:
        """Run until cancelled."""
        if self._api_client is not None:
            await self._run(self._api_client)
            return
        async with kube_client(self.settings) as api_client:
            await self._run(api_client)

    async def _run(self, api_client: client.ApiClient) -> None:
        settings, node = self.settings, self.settings.agent_node_name
        cache = InstanceCache(
            api_client, settings.akri_namespace, on_conflict=metrics.SLOT_CONFLICT_RETRIES.inc
        )
        env = RunnerEnv(
            node=node,
            registry=self.registry,
            cache=cache,
            reporter=lambda: StatusReporter(api_client),
            read_properties=kube_reader(api_client),
            offline_grace=settings.offline_grace,
        )
        configurations = ConfigurationWatcher(api_client, env, settings.akri_namespace)
        allocations = Allocations()
        plugins = PluginManager(
            cache,
            configurations.get,
            node,
            allocations=allocations,
            device_plugins_dir=settings.device_plugins_dir,
            allocate_timeout=settings.allocate_timeout,
            device_extras=configurations.extras,
        )
        configurations.on_change = plugins.configurations_changed
        reclaimer = Reclaimer(
            cache,
            node,
            settings.pod_resources_socket,
            allocations=allocations,
            interval=settings.reclaim_interval,
            grace=settings.reclaim_grace,
        )
        self.cache, self.configurations, self.plugins = cache, configurations, plugins
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(
                RegistrationServer(self.registry, settings.discovery_handlers_directory)
            )
            if settings.metrics_port:
                telemetry = await serve_telemetry(settings.metrics_port, lambda: self.ready)
                stack.push_async_callback(telemetry.cleanup)
            log.info("agent of node %s starting", node)
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(cache.run(), name="instances")
                tasks.create_task(configurations.run(), name="configurations")
                tasks.create_task(plugins.run(), name="device plugins")
                tasks.create_task(reclaimer.run(), name="slot reclaim")
