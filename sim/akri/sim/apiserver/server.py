"""`ApiServer`: the emulator's lifecycle, kubeconfig and CRD loading."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from akri.service import Service
from akri.sim.apiserver import errors
from akri.sim.apiserver.access_reviews import AccessReviews
from akri.sim.apiserver.admin import AdminHandlers
from akri.sim.apiserver.apps_kinds import apps_kinds
from akri.sim.apiserver.authn import TokenIssuer
from akri.sim.apiserver.authz import RBAC_GROUP, AccessLog, Authorizer, Guard
from akri.sim.apiserver.collector import GarbageCollector
from akri.sim.apiserver.core_kinds import CRD_GROUP, builtin_kinds
from akri.sim.apiserver.dra_kinds import dra_kinds
from akri.sim.apiserver.faults import Faults
from akri.sim.apiserver.handlers import ApiHandlers, LogSource, pause_gate, status_errors
from akri.sim.apiserver.kubernetes_service import KubernetesService
from akri.sim.apiserver.operations import Operations
from akri.sim.apiserver.platform_kinds import platform_kinds
from akri.sim.apiserver.pod_access import Exec, PodAccess
from akri.sim.apiserver.resources import Registry
from akri.sim.apiserver.store import DEFAULT_HISTORY, Store
from akri.sim.apiserver.tls import Pki

CONTEXT = "akri-sim"
# The admin kubeconfig's token: a member of system:masters, allowed everything.
ADMIN_TOKEN = "akri-sim"
_SHUTDOWN_TIMEOUT_S = 2.0


def kubeconfig(url: str) -> dict[str, Any]:
    """A kubeconfig for kubectl and kubernetes_asyncio: plain HTTP, a dummy token."""
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {"token": ADMIN_TOKEN}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": "default"},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


class ApiServer(Service):
    """An in-memory Kubernetes API server on a local TCP port."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        history_limit: int = DEFAULT_HISTORY,
        bookmark_interval_s: float = 60.0,
        fault_seed: int | None = None,
        dra: bool = True,
        pki: Pki | None = None,
        secure_port: int = 0,
        authorization: bool = False,
        secure_host: str | None = None,
        listeners: Sequence[socket.socket] = (),
        log_source: LogSource | None = None,
        exec_source: Exec | None = None,
    ) -> None:
        """`dra`: serve `resource.k8s.io/v1`, as Kubernetes >= 1.34 does by default. With
        `pki` (created on start) the API is also served over TLS on `secure_host` (default:
        `host`) and `secure_port`, as pods reach it in-cluster. `listeners`: bound sockets also
        served as `host`:`port` is (e.g. the same port in another network namespace).
        `authorization`: authorize every request by the RBAC objects stored (`authz`); the
        admin token of `kubeconfig()` may do anything either way. `log_source` and
        `exec_source`: where `pods/log` reads a container's output and `pods/exec` runs a
        command (the kubelets' side, given by a cluster)."""
        self._host = host
        self._port = port
        self.pki = pki
        self._secure_host = secure_host or host
        self._secure_port = secure_port
        self._listeners = list(listeners)
        self.secure_port = 0

        registry = Registry()
        for kind in [
            *builtin_kinds(),
            *apps_kinds(),
            *platform_kinds(),
            *(dra_kinds() if dra else []),
        ]:
            registry.add(kind)
        self.operations = Operations(registry, Store(history_limit))
        self.faults = Faults(fault_seed)
        self._collector = GarbageCollector(self.operations)
        self._kubernetes_service = KubernetesService(self.operations)
        self.tokens = TokenIssuer(ADMIN_TOKEN, self._find)
        self.access = AccessLog()
        authorizer = Authorizer(self._rbac_objects) if authorization else None
        self._guard = Guard(self.tokens, authorizer, self.access)
        self._handlers = ApiHandlers(
            self.operations, self.faults, self._guard, bookmark_interval_s, log_source
        )
        self._pod_access = PodAccess(self.operations.store, self._guard, exec_source)
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._url = ""

    def _find(self, plural: str, namespace: str, name: str) -> dict[str, Any] | None:
        return self.operations.store.peek(("", plural), namespace, name)

    def _rbac_objects(self, plural: str) -> list[dict[str, Any]]:
        return self.operations.store.objects((RBAC_GROUP, plural))

    @property
    def url(self) -> str:
        if not self._url:
            raise RuntimeError("the server is not started")
        return self._url

    async def start(self) -> None:
        app = web.Application(middlewares=[pause_gate(self.faults), status_errors])
        app.add_routes(AdminHandlers(self.faults, self.access).routes())
        app.add_routes(AccessReviews(self._guard).routes())
        app.add_routes(self._pod_access.routes())
        app.add_routes(self._handlers.routes())
        # Cancel a handler when its client goes away, so abandoned watches end at once.
        self._runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=_SHUTDOWN_TIMEOUT_S, access_log=None
        )
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        await site.start()
        port = self._runner.addresses[0][1]
        self._url = f"http://{self._host}:{port}"
        if self.pki is not None:
            self.pki.create()
            context = self.pki.server_context()
            secure = web.TCPSite(
                self._runner, self._secure_host, self._secure_port, ssl_context=context
            )
            await secure.start()
            self.secure_port = self._runner.addresses[1][1]
        for listener in self._listeners:
            await web.SockSite(self._runner, listener).start()
        # Where pods reach the API server: the secure address, if served.
        advertised = (self._secure_host, self.secure_port) if self.pki else (self._host, port)
        self._kubernetes_service.ensure(*advertised)
        self._tasks = [
            asyncio.create_task(self._collector.run(), name="apiserver-gc"),
            asyncio.create_task(
                self._kubernetes_service.run(*advertised), name="apiserver-kubernetes-service"
            ),
        ]

    async def stop(self) -> None:
        """End every watch, stop serving and stop the collector and the Service's keeper."""
        self.faults.resume()
        self.faults.drop_watches()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    def write_kubeconfig(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.write_text(yaml.safe_dump(kubeconfig(self.url), sort_keys=False))
        return target

    async def apply_definitions(self, documents: Iterable[dict[str, Any]]) -> None:
        """Create or replace CustomResourceDefinition documents."""
        crds = self.operations.kind(CRD_GROUP, "v1", "customresourcedefinitions")
        for document in documents:
            name = document["metadata"]["name"]
            try:
                current = self.operations.get(crds, "", name)
            except errors.ApiError as error:
                if error.code != 404:
                    raise
                self.operations.create(crds, None, document)
                continue
            document["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self.operations.update(crds, "", name, document)
