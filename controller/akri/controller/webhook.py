"""The validating admission webhook for Configurations, served over TLS by every controller replica.

The certificate (tls.crt, tls.key in one directory, e.g. a mounted Secret made by the chart or
by cert-manager) is read again whenever its files change, so a rotated certificate is served
to new connections without a restart. Decisions are `akri.controller.admission`'s; one
question is the API server's: may the user who writes the Configuration create the brokers and
Services the controller would create for it (a SubjectAccessReview)? The controller creates
them with its own rights, so without this check a user allowed only Configurations would get
pods in their namespace. An answer that cannot be had refuses the write.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.admission import Access, BadReview, Policy, access_needed, refusal, review
from akri.kube.calls import describe
from akri.service import Service

log = logging.getLogger(__name__)

PATH = "/validate-configurations"
CERT_FILE = "tls.crt"
KEY_FILE = "tls.key"


def _stamp(directory: Path) -> tuple[tuple[int, int], ...]:
    """Changes when either file is replaced (a Secret volume swaps a symlink)."""
    stats = (os.stat(directory / name) for name in (CERT_FILE, KEY_FILE))
    return tuple((s.st_ino, s.st_mtime_ns) for s in stats)


# (userInfo of the request, namespace, what) -> whether that user may create it there.
AccessCheck = Callable[[Mapping[str, Any], str, Access], Awaitable[bool]]


def subject_access_check(api: client.ApiClient) -> AccessCheck:
    """Asks the API server with a SubjectAccessReview, for the user as the request names it
    (groups, uid and extra included, so bound tokens and impersonation are judged alike)."""
    authorization = client.AuthorizationV1Api(api)

    async def allowed(user: Mapping[str, Any], namespace: str, access: Access) -> bool:
        spec = client.V1SubjectAccessReviewSpec(
            user=user.get("username"),
            uid=user.get("uid"),
            groups=user.get("groups"),
            extra=user.get("extra"),
            resource_attributes=client.V1ResourceAttributes(
                namespace=namespace, verb="create", group=access.group, resource=access.resource
            ),
        )
        answer = await authorization.create_subject_access_review(
            client.V1SubjectAccessReview(spec=spec)
        )
        return bool(answer.status and answer.status.allowed)

    return allowed


async def decide(body: Any, policy: Policy, check: AccessCheck | None) -> dict[str, Any]:
    """The AdmissionReview answering `body`: `review`'s checks, then the access checks."""
    answer = review(body, policy)
    if check is None or not answer["response"]["allowed"]:
        return answer
    request = body["request"]
    uid, namespace = request["uid"], str(request.get("namespace") or "")
    user = request.get("userInfo") or {}
    for access in access_needed(request.get("object"), request.get("oldObject")):
        what = f"{access.resource}.{access.group}" if access.group else access.resource
        try:
            allowed = await check(user, namespace, access)
        except (ApiException, aiohttp.ClientError, TimeoutError) as error:
            return refusal(uid, f"cannot check whether the user may create {what}: {error}")
        if not allowed:
            return refusal(
                uid,
                f'user "{user.get("username", "")}" may not create {what} in namespace '
                f"{namespace}, which the controller would create for {access.why}: a "
                f"Configuration gives no more than its author has (docs/security.md)",
            )
    return answer


class WebhookServer(Service):
    """HTTPS on `port` with POST /validate-configurations; checks the certificate every
    `reload_interval` seconds."""

    def __init__(
        self,
        port: int,
        cert_dir: Path,
        host: str = "0.0.0.0",
        reload_interval: float = 30.0,
        policy: Policy | None = None,
        check: AccessCheck | None = None,
    ) -> None:
        self._policy = policy or Policy()
        self._check = check
        self._port = port
        self._cert_dir = cert_dir
        self._host = host
        self._reload_interval = reload_interval
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._loaded: tuple[tuple[int, int], ...] = ()
        self._runner: web.AppRunner | None = None
        self._reloader: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        """The bound port (useful when started with port 0)."""
        if self._runner is None:
            raise RuntimeError("the webhook is not started")
        return int(self._runner.addresses[0][1])

    def _load(self) -> None:
        stamp = _stamp(self._cert_dir)
        if stamp != self._loaded:
            self._context.load_cert_chain(self._cert_dir / CERT_FILE, self._cert_dir / KEY_FILE)
            self._loaded = stamp
            log.info("webhook certificate loaded from %s", self._cert_dir)

    async def _reload(self) -> None:
        while True:
            await asyncio.sleep(self._reload_interval)
            try:
                self._load()
            except (OSError, ssl.SSLError) as error:  # half-written files: next round
                log.warning("webhook certificate not reloaded: %s", describe(error))

    async def start(self) -> None:
        self._load()  # a missing or broken certificate stops the start with the reason
        app = web.Application()
        app.router.add_post(PATH, self._validate)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port, ssl_context=self._context).start()
        except BaseException:  # e.g. the port still held by a replica on the same host
            await runner.cleanup()
            raise
        self._runner = runner
        self._reloader = asyncio.create_task(self._reload(), name="webhook-certificate")

    async def _validate(self, request: web.Request) -> web.Response:
        try:
            answer = await decide(await request.json(), self._policy, self._check)
        except (json.JSONDecodeError, UnicodeDecodeError, BadReview) as error:
            return web.Response(status=400, text=f"not an AdmissionReview: {error}")
        return web.json_response(answer)

    async def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloader
            self._reloader = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
