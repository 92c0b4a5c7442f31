"""Entry point of `akri-controller`.

Exit codes: 0 after SIGTERM/SIGINT (the lease is released for a fast handover), 1 when
leadership is lost (the Deployment restarts the replica as a fresh candidate), 2 on bad settings.
"""

from __future__ import annotations

from akri.kube import lean

lean.install()  # before the imports below load kubernetes-asyncio: see akri.kube.lean

import asyncio
import logging
import secrets
import signal
import ssl
import sys
from collections.abc import Sequence

from kubernetes_asyncio import client

from akri import logs
from akri.backoff import Backoff
from akri.controller.certificate_keeper import CertificateKeeper
from akri.controller.controller import Controller, resolved
from akri.controller.leader import LeaderElector
from akri.controller.metrics import ControllerMetrics
from akri.controller.settings import ControllerSettings, load_settings
from akri.controller.webhook import WebhookServer, subject_access_check
from akri.kube import connect
from akri.kube.calls import describe
from akri.settings import SettingsError, command_line, variables
from akri.telemetry import serve_telemetry

log = logging.getLogger("akri.controller")

EXIT_LOST_LEADERSHIP = 1
EXIT_SETTINGS = 2
SIGNALS = (signal.SIGTERM, signal.SIGINT)
DESCRIPTION = (
    "The akri controller (a Deployment): deploys broker Pods or Jobs and Services for every "
    "Instance and cleans up after devices and nodes that are gone. Configured by environment "
    "variables only."
)


def elector(settings: ControllerSettings, api: client.ApiClient) -> LeaderElector:
    return LeaderElector(
        api,
        settings.pod_namespace,
        settings.lease_name,
        f"{settings.identity_base()}-{secrets.token_hex(4)}",
        settings.lease_timing(),
    )


async def serve(controller: Controller, candidate: LeaderElector | None) -> int:
    """Run the controller, behind leader election unless there is no candidate."""
    if candidate is None:
        await controller.run()
        return 0
    await candidate.run(controller.run)
    log.error("leadership lost; exiting so a fresh replica campaigns again")
    return EXIT_LOST_LEADERSHIP


async def run(settings: ControllerSettings) -> int:
    """Run until SIGTERM or SIGINT (exit 0) or until leadership is lost (exit 1)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in SIGNALS:
        loop.add_signal_handler(signum, stop.set)
    try:
        return await _run_until(stop, settings)
    finally:
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)


async def _run_until(stop: asyncio.Event, settings: ControllerSettings) -> int:
    async with await connect.api_client(settings.kubeconfig) as api:
        metrics = ControllerMetrics()
        tuning = await resolved(api, settings.tuning())
        controller = Controller(api, tuning, metrics=metrics)
        candidate = elector(settings, api) if settings.leader_election else None

        def ready() -> bool:
            """A synced leader, or a standby replica."""
            return controller.ready or (candidate is not None and not candidate.leading)

        telemetry = None
        if settings.metrics_port:
            telemetry = await serve_telemetry(settings.metrics_port, ready, metrics.registry)
        webhook, keeper, serving = None, None, None
        if settings.webhook_port:  # every replica answers, leader or not
            webhook = WebhookServer(
                settings.webhook_port,
                settings.webhook_cert_dir,
                policy=settings.admission_policy(),
                check=subject_access_check(api),
            )
            if settings.webhook_cert_secret:
                keeper = CertificateKeeper(
                    api,
                    settings.pod_namespace,
                    settings.webhook_cert_secret,
                    settings.webhook_configuration,
                    settings.webhook_cert_dir,
                    settings.webhook_certificate(),
                )
                await keeper.start()
                serving = asyncio.create_task(
                    _serve_when_ready(webhook, keeper), name="webhook-start"
                )
            else:
                await webhook.start()
        work = asyncio.create_task(serve(controller, candidate), name="controller")
        stopping = asyncio.create_task(stop.wait(), name="controller-signals")
        try:
            done, _ = await asyncio.wait([work, stopping], return_when=asyncio.FIRST_COMPLETED)
        finally:
            work.cancel()
            stopping.cancel()
            await asyncio.gather(work, stopping, return_exceptions=True)
            if serving is not None:
                serving.cancel()
                await asyncio.gather(serving, return_exceptions=True)
            if webhook is not None:
                await webhook.stop()
            if keeper is not None:
                await keeper.stop()
            if telemetry is not None:
                await telemetry.cleanup()
    if work in done:
        return work.result()
    log.info("stopped")
    return 0


async def _serve_when_ready(webhook: WebhookServer, keeper: CertificateKeeper) -> None:
    """The webhook starts once its certificate exists (the controller's other work meanwhile
    goes on)."""
    await keeper.ready.wait()
    backoff = Backoff(initial=1.0, maximum=30.0)
    while True:
        try:
            await webhook.start()
            return
        except (OSError, ssl.SSLError) as error:  # e.g. its port not free yet
            log.error("the admission webhook cannot serve yet: %s", describe(error))
        await asyncio.sleep(backoff.next_delay())


def main(argv: Sequence[str] | None = None) -> int:
    command_line("akri-controller", DESCRIPTION, variables(ControllerSettings), argv)
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"akri-controller: invalid settings: {error}", file=sys.stderr)
        return EXIT_SETTINGS
    logs.configure(settings.log_level, settings.log_format, component="controller")
    try:
        return asyncio.run(run(settings))
    except KeyboardInterrupt:
        return 0


if __name__ == "__main__":
    sys.exit(main())
