"""Entry point of `akri-agent`: settings from the environment, logs, run until SIGTERM.

Exit codes: 0 after a requested stop, 1 when the agent fails (logged), 2 when the settings are
unusable (the reason on stderr).
"""

from __future__ import annotations

import asyncio
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
    try:
        asyncio.run(run(Agent(settings)))
    except Exception:  # e.g. an unreadable kubeconfig: say why, and let the kubelet restart us
        log.exception("akri-agent failed")
        return EXIT_FAILURE
    return 0


if __name__ == "__main__":
    sys.exit(main())
