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
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any

from kubernetes_asyncio import client

from akri.agent.configurations import ConfigurationWatcher
from akri.agent.devices import DeviceStore
from akri.agent.discovery.kube_properties import kube_reader
from akri.agent.discovery.registration import RegistrationServer
from akri.agent.discovery.registry import HandlerRegistry
from akri.agent.dra.plugin import DraPlugin, PluginEnv
from akri.agent.dra.server import KubeletDraPlugin
from akri.agent.dra_slices import LocalSlices
from akri.agent.instance_reports import InstanceReporter
from akri.agent.instances import InstanceCache
from akri.agent.metrics import AgentMetrics
from akri.agent.plugins import Allocations, PluginManager, Reclaimer
from akri.agent.plugins.problems import PluginProblems
from akri.agent.runner import RunnerEnv
from akri.agent.settings import AgentSettings
from akri.agent.status import StatusReporter
from akri.discovery import debug_echo
from akri.discovery.entry_points import handler_factory
from akri.discovery.handler import DiscoveryHandler
from akri.dra.devices import DRIVER
from akri.dra.mode import Mode, resolve
from akri.kube import connect
from akri.telemetry import serve_telemetry

log = logging.getLogger(__name__)


def default_handlers(settings: AgentSettings) -> list[DiscoveryHandler]:
    """The embedded handlers the settings ask for: debugEcho, made by its entry point."""
    if not settings.debug_echo_enabled:
        return []
    create = handler_factory(debug_echo.NAME)
    environ = {debug_echo.AVAILABILITY_FILE_ENV: str(settings.debug_echo_availability_file)}
    return [create(settings.debug_echo_instances_shared, environ)]


@contextlib.asynccontextmanager
async def kube_client(settings: AgentSettings) -> AsyncIterator[client.ApiClient]:
    """A client from KUBECONFIG, else from the Pod's service account."""
    async with await connect.api_client(settings.kubeconfig) as api_client:
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
        self.metrics = AgentMetrics()
        """This agent's metrics, on its own registry (the one its telemetry serves)."""
        self.devices = DeviceStore()
        """Discovered devices' mounts and device nodes, for the plugins."""
        self.cache: InstanceCache | None = None
        self.configurations: ConfigurationWatcher | None = None
        self.plugins: PluginManager | None = None
        self.slices: LocalSlices | None = None
        self.dra_plugin: KubeletDraPlugin | None = None
        self.mode: Mode | None = None
        """The allocation mode, once resolved at start."""

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
        metrics = self.metrics
        cache = InstanceCache(
            api_client, settings.akri_namespace, on_conflict=metrics.slot_conflict_retries.inc
        )
        devices = self.devices
        env = RunnerEnv(
            node=node,
            registry=self.registry,
            cache=cache,
            devices=devices,
            reporter=lambda: StatusReporter(api_client, node),
            read_properties=kube_reader(api_client),
            offline_grace=settings.offline_grace,
            metrics=metrics,
            allowed_mounts=settings.allowed_mount_paths,
        )
        configurations = ConfigurationWatcher(api_client, env, settings.akri_namespace)
        self.cache, self.configurations = cache, configurations
        self.mode = await resolve(settings.akri_mode, api_client, settings.plugins_registry_dir)
        components = (
            self._dra_components(api_client, cache, devices, configurations)
            if self.mode is Mode.DRA
            else self._device_plugin_components(cache, devices, configurations)
        )
        async with contextlib.AsyncExitStack() as stack:
            await stack.enter_async_context(
                RegistrationServer(self.registry, settings.discovery_handlers_directory)
            )
            if settings.metrics_port:
                telemetry = await serve_telemetry(
                    settings.metrics_port, lambda: self.ready, metrics.registry
                )
                stack.push_async_callback(telemetry.cleanup)
            log.info("agent of node %s starting in %s mode", node, self.mode)
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(cache.run(), name="instances")
                tasks.create_task(configurations.run(), name="configurations")
                for name, work in components.items():
                    tasks.create_task(work, name=name)

    def _device_plugin_components(
        self, cache: InstanceCache, devices: DeviceStore, configurations: ConfigurationWatcher
    ) -> dict[str, Coroutine[Any, Any, None]]:
        """Device plugins per Instance and Configuration, and the slot reclaimer."""
        settings = self.settings
        allocations = Allocations()
        plugins = PluginManager(
            cache,
            configurations.get,
            settings.agent_node_name,
            configuration_changes=configurations.changes,
            allocations=allocations,
            metrics=self.metrics,
            device_plugins_dir=settings.device_plugins_dir,
            allocate_timeout=settings.allocate_timeout,
            devices=devices,
            rediscovery_wait=settings.device_wait,
            problems=PluginProblems(
                InstanceReporter(cache, settings.agent_node_name),
                StatusReporter(cache.api_client, settings.agent_node_name),
                configurations.get,
                cache.configuration_of,
            ),
        )
        reclaimer = Reclaimer(
            cache,
            settings.agent_node_name,
            settings.pod_resources_socket,
            allocations=allocations,
            metrics=self.metrics,
            interval=settings.reclaim_interval,
            grace=settings.reclaim_grace,
        )
        self.plugins = plugins
        return {"device plugins": plugins.run(), "slot reclaim": reclaimer.run()}

    def _dra_components(
        self,
        api_client: client.ApiClient,
        cache: InstanceCache,
        devices: DeviceStore,
        configurations: ConfigurationWatcher,
    ) -> dict[str, Coroutine[Any, Any, None]]:
        """This node's ResourceSlices and the kubelet DRA plugin (docs/design.md §8a)."""
        settings = self.settings
        plugin = DraPlugin(
            PluginEnv(
                api_client=api_client,
                cache=cache,
                configurations=configurations.get,
                devices=devices,
                rediscovery_wait=settings.device_wait,
                node=settings.agent_node_name,
                state_dir=settings.kubelet_plugins_dir / DRIVER,
                cdi_dir=settings.cdi_dir,
            )
        )
        slices = LocalSlices(
            api_client,
            cache,
            configurations.get,
            settings.agent_node_name,
            plugin.allocated,
            changes=(configurations.changes, plugin.prepared_changes),
        )
        kubelet_plugin = KubeletDraPlugin(plugin, settings.plugins_registry_dir)
        self.slices, self.dra_plugin = slices, kubelet_plugin
        return {"resource slices": slices.run(), "kubelet DRA plugin": kubelet_plugin.run()}
