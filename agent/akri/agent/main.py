"""Entry point of `akri-agent`: settings from the environment, logs, run until SIGTERM.

Exit codes: 0 after a requested stop, 1 when the agent fails (logged), 2 when the settings are
unusable (the reason on stderr).
"""

from __future__ import annotations

from akri.kube import lean

lean.install()  # before the imports below load kubernetes-asyncio: see akri.kube.lean

import asyncio
import gc
import logging
import signal
import sys
from collections.abc import Sequence

from akri import logs
from akri.agent.agent import Agent
from akri.agent.settings import AgentSettings, load_settings
from akri.settings import SettingsError, command_line, variables

EXIT_FAILURE = 1
EXIT_USAGE = 2

log = logging.getLogger("akri.agent")

YOUNG_GC_THRESHOLD = 10_000
"""Allocations between two collections of the youngest generation (Python's default is 700).
An agent with a thousand plugins holds some 250 000 objects; the thousand re-registrations after
a kubelet restart allocate in a burst, which at 700 ran about 200 young and two full
collections (0.45 s of the agent's 3 s of CPU). At 10 000 about 12 young ones and no full one
run, and the RSS does not change measurably: nearly everything short-lived is freed by
reference counting before any collection."""

DESCRIPTION = (
    "The akri agent of one node (a DaemonSet): runs the discovery handlers, keeps an Instance "
    "per discovered device and serves their device plugins to the kubelet. Configured by "
    "environment variables only."
)


async def run(agent: Agent) -> None:
    """Run `agent` until SIGTERM or SIGINT, then stop it cleanly."""
    task = asyncio.create_task(agent.run(), name="agent")
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        if not task.cancelled():
            raise  # we were cancelled ourselves, not by a signal


def main(argv: Sequence[str] | None = None) -> int:
    command_line("akri-agent", DESCRIPTION, variables(AgentSettings), argv)
    try:
        settings = load_settings()
    except SettingsError as error:
        print(f"akri-agent: invalid settings: {error}", file=sys.stderr)
        return EXIT_USAGE
    logs.configure(settings.log_level, settings.log_format, node=settings.agent_node_name)
    gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
    try:
        asyncio.run(run(Agent(settings)))
    except Exception:  # e.g. an unreadable kubeconfig: say why, and let the kubelet restart us
        log.exception("akri-agent failed")
        return EXIT_FAILURE
    return 0


if __name__ == "__main__":
    sys.exit(main())
