"""The DRA plugin on its socket, registered through the kubelet's plugin watcher.

The DRAPlugin (and health) service is served first on `<kubelet plugins dir>/akri.sh/dra.sock`,
then the registration service on `<plugins_registry>/akri.sh-reg.sock`, which the kubelet finds
by watching that directory and asks for the plugin's type, name, endpoint and services. A
socket left by an earlier agent is replaced. Stopping removes the registration socket first,
so the kubelet deregisters the plugin before its endpoint goes away; the checkpoint and the
CDI specs stay for the next agent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from akri import grpc_servers
from akri.agent.dra.plugin import DraPlugin
from akri.dra.devices import DRIVER
from akri.owner_only import make_directory
from akri.proto.dra.v1.api_pb2_grpc import add_DRAPluginServicer_to_server
from akri.proto.dra.v1.constants import DRA_PLUGIN_SERVICE, HEALTH_SERVICE
from akri.proto.drahealth.v1alpha1.api_pb2_grpc import add_DRAResourceHealthServicer_to_server
from akri.proto.pluginregistration.v1 import api_pb2 as registration
from akri.proto.pluginregistration.v1.api_pb2_grpc import (
    RegistrationServicer,
    add_RegistrationServicer_to_server,
)
from akri.proto.pluginregistration.v1.constants import DRA_PLUGIN
from akri.unix_sockets import add_port

log = logging.getLogger(__name__)

SOCKET_NAME = "dra.sock"
REGISTRATION_SOCKET_NAME = f"{DRIVER}-reg.sock"


class Registration(RegistrationServicer):
    """Answers the kubelet's plugin watcher and logs its verdict."""

    def __init__(self, endpoint: Path) -> None:
        self._info = registration.PluginInfo(
            type=DRA_PLUGIN,
            name=DRIVER,
            endpoint=str(endpoint),
            supported_versions=[DRA_PLUGIN_SERVICE, HEALTH_SERVICE],
        )

    async def GetInfo(
        self, request: registration.InfoRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> registration.PluginInfo:
        return self._info

    async def NotifyRegistrationStatus(
        self, request: registration.RegistrationStatus, context: grpc.aio.ServicerContext[Any, Any]
    ) -> registration.RegistrationStatusResponse:
        if request.plugin_registered:
            log.info("DRA plugin %s registered with the kubelet", DRIVER)
        else:
            log.error("the kubelet refused DRA plugin %s: %s", DRIVER, request.error)
        return registration.RegistrationStatusResponse()


class KubeletDraPlugin:
    """`run()` serves and stays registered until cancelled."""

    def __init__(self, plugin: DraPlugin, registry_dir: Path) -> None:
        self.plugin = plugin
        self.socket = plugin.env.state_dir / SOCKET_NAME
        self.registration_socket = registry_dir / REGISTRATION_SOCKET_NAME

    def _add_plugin(self, server: grpc.aio.Server) -> None:
        add_DRAPluginServicer_to_server(self.plugin, server)
        add_DRAResourceHealthServicer_to_server(self.plugin, server)

    async def run(self) -> None:
        plugin_server = await _serve(self.socket, self._add_plugin)
        try:
            registration_server = await _serve(
                self.registration_socket,
                lambda server: add_RegistrationServicer_to_server(
                    Registration(self.socket), server
                ),
            )
            try:
                log.info("DRA plugin served on %s", self.socket)
                await asyncio.Event().wait()
            finally:
                self.registration_socket.unlink(missing_ok=True)
                await registration_server.stop(grace=None)
        finally:
            self.socket.unlink(missing_ok=True)
            await plugin_server.stop(grace=None)


def _replace_stale(socket: Path) -> None:
    """An earlier agent's socket: nobody serves it any more."""
    make_directory(socket.parent)
    socket.unlink(missing_ok=True)


async def _serve(socket: Path, add: Callable[[grpc.aio.Server], None]) -> grpc.aio.Server:
    _replace_stale(socket)
    server = grpc.aio.server()
    add(server)
    add_port(server, f"unix://{socket}")
    await grpc_servers.start(server)
    return server
