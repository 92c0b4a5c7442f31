"""The validating admission webhook for Configurations, served over TLS by every controller replica.

The certificate (tls.crt, tls.key in one directory, e.g. a mounted Secret made by the chart or
by cert-manager) is read again whenever its files change, so a rotated certificate is served
to new connections without a restart. Decisions are `akri.controller.admission`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import ssl
from pathlib import Path

from aiohttp import web

from akri.controller.admission import BadReview, review
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


async def _validate(request: web.Request) -> web.Response:
    try:
        answer = review(await request.json())
    except (json.JSONDecodeError, UnicodeDecodeError, BadReview) as error:
        return web.Response(status=400, text=f"not an AdmissionReview: {error}")
    return web.json_response(answer)


class WebhookServer(Service):
    """HTTPS on `port` with POST /validate-configurations; checks the certificate every
    `reload_interval` seconds."""

    def __init__(
        self, port: int, cert_dir: Path, host: str = "0.0.0.0", reload_interval: float = 30.0
    ) -> None:
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
        app.router.add_post(PATH, _validate)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port, ssl_context=self._context).start()
        except BaseException:  # e.g. the port still held by a replica on the same host
            await runner.cleanup()
            raise
        self._runner = runner
        self._reloader = asyncio.create_task(self._reload(), name="webhook-certificate")

    async def stop(self) -> None:
        if self._reloader is not None:
            self._reloader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloader
            self._reloader = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
