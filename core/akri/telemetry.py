"""`/metrics`, `/healthz` and `/readyz` on one port, for the agent and the controller alike."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest


async def serve_telemetry(
    port: int,
    ready: Callable[[], bool],
    host: str = "0.0.0.0",
) -> web.AppRunner:
    """Start serving; stop with `await runner.cleanup()`.

    `/healthz` answers 200 while the event loop runs (a wedged loop fails the probe);
    `/readyz` answers 200 once `ready()` is true (e.g. caches synced, plugins registered).
    """

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(REGISTRY), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def healthz(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def readyz(_: web.Request) -> web.Response:
        return web.Response(text="ok") if ready() else web.Response(status=503, text="not ready")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
