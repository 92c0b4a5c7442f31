"""Entry point of `akri-discovery-handler`: run one handler as an external gRPC handler.

Every handler installed under the entry point group `akri.discovery_handlers` is a subcommand
(`akri.discovery.entry_points`): its factory gets the `--shared/--no-shared` choice (None: the
handler's default) and the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from akri.discovery.debug_echo import NAME as DEBUG_ECHO
from akri.discovery.entry_points import handler_factory, handler_names
from akri.discovery.registration import DEFAULT_DIRECTORY
from akri.discovery.server import DEFAULT_PORT, HandlerServer
from akri.discovery_handlers import debug_echo
from akri.discovery_handlers.mdns import handler as mdns
from akri.discovery_handlers.onvif import handler as onvif
from akri.settings import Variable, command_line, help_text

EXIT_USAGE = 2


DESCRIPTION = (
    "Serve one discovery handler over Akri's discovery.proto and register it with the local "
    "agent. `akri-discovery-handler HANDLER --help` lists that handler's variables."
)
COMMON = (
    Variable(
        "DISCOVERY_HANDLERS_DIRECTORY",
        str(DEFAULT_DIRECTORY),
        "directory of agent-registration.sock and of the handler's socket",
    ),
    Variable("POD_IP", "unset", f"serve on POD_IP:{DEFAULT_PORT} (TCP) instead of a unix socket"),
)
ENVIRONMENT: dict[str, tuple[Variable, ...]] = {
    DEBUG_ECHO: debug_echo.ENVIRONMENT,
    mdns.Mdns.name: mdns.ENVIRONMENT,
    onvif.Onvif.name: onvif.ENVIRONMENT,
}
"""The variables each handler reads besides COMMON."""


def parse_args(argv: Sequence[str] | None, environ: Mapping[str, str]) -> argparse.Namespace:
    def arguments(parser: argparse.ArgumentParser) -> None:
        options = argparse.ArgumentParser(add_help=False)
        options.add_argument(
            "--registration-dir",
            type=Path,
            default=Path(environ.get("DISCOVERY_HANDLERS_DIRECTORY", str(DEFAULT_DIRECTORY))),
            help="directory of agent-registration.sock and of the handler's socket "
            "(default: DISCOVERY_HANDLERS_DIRECTORY or %(default)s)",
        )
        options.add_argument(
            "--shared",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="whether devices are visible from several nodes (default: the handler's)",
        )
        options.add_argument(
            "--port", type=int, default=DEFAULT_PORT, help="TCP port when POD_IP is set"
        )
        options.add_argument(
            "--log-level",
            default="INFO",
            choices=["DEBUG", "INFO", "WARNING", "ERROR"],
            type=str.upper,
        )
        handlers = parser.add_subparsers(dest="handler", metavar="HANDLER", required=True)
        for name in handler_names():
            environment = (*ENVIRONMENT.get(name, ()), *COMMON)
            handlers.add_parser(
                name,
                parents=[options],
                help=f"run the {name} handler",
                **help_text(f"Serve the {name} discovery handler.", environment),
            )

    return command_line("akri-discovery-handler", DESCRIPTION, COMMON, argv, arguments)


async def run(server: HandlerServer) -> None:
    """Serve until SIGTERM or SIGINT, then stop cleanly."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv, os.environ)
    # force: onvif-zeep-async configures the root logger (INFO) when it is imported.
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    try:
        handler = handler_factory(args.handler)(args.shared, os.environ)
    except ValueError as error:
        print(f"akri-discovery-handler: {error}", file=sys.stderr)
        return EXIT_USAGE
    server = HandlerServer(
        handler, args.registration_dir, pod_ip=os.environ.get("POD_IP") or None, port=args.port
    )
    asyncio.run(run(server))
    return 0


if __name__ == "__main__":
    sys.exit(main())
