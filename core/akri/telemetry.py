"""`/metrics`, `/healthz` and `/readyz` on one port, for the agent and the controller alike."""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    generate_latest,
)


def program_registry() -> CollectorRegistry:
    """A registry for one program's metrics (an agent, a controller), apart from any other
    in the process; with the process's CPU, memory and GC figures, as the default one has."""
    registry = CollectorRegistry()
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry


async def serve_telemetry(
    port: int,
    ready: Callable[[], bool],
    registry: CollectorRegistry,
    host: str = "0.0.0.0",
) -> web.AppRunner:
    """Start serving; stop with `await runner.cleanup()`.

    `/metrics` serves `registry`, the program's own (not the process-wide default one);
    `/healthz` answers 200 while the event loop runs (a wedged loop fails the probe);
    `/readyz` answers 200 once `ready()` is true (e.g. caches synced, plugins registered).
    """

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
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
