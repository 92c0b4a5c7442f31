"""`akri cleanup` and `akri apply`: what the chart's hooks run, as subcommands of `akri`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from akri.commands import Subparsers, duration


def _run_cleanup(args: argparse.Namespace) -> int:
    # Imported here: the API client is not needed by the other commands.
    from akri.controller.uninstall import Cleanup
    from akri.kube import connect

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", force=True)

    async def run() -> int:
        async with await connect.api_client(args.kubeconfig) as api:
            outcome = await Cleanup(api, args.namespace).run(args.timeout)
        print(
            f"akri cleanup: {len(outcome.deleted)} Configurations deleted, "
            f"{len(outcome.forced)} Instances released after the timeout"
        )
        return 0

    return _run_api_command("cleanup", run, (OSError, RuntimeError))


def _run_api_command(
    name: str,
    run: Callable[[], Coroutine[Any, Any, int]],
    expected: tuple[type[Exception], ...],
) -> int:
    """Run a command that talks to the API server: its exit code, or 1 with one line on
    stderr for a refusal (in the API's words) or one of the `expected` errors."""
    # Imported here: the API client is not needed by the other commands.
    from kubernetes_asyncio.client.exceptions import ApiException

    from akri.kube.calls import error_message

    try:
        return asyncio.run(run())
    except ApiException as error:
        print(f"akri {name}: {error_message(error)}", file=sys.stderr)
    except expected as error:
        print(f"akri {name}: {error}", file=sys.stderr)
    return 1


def add_cleanup(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "cleanup",
        help="delete every Configuration and wait until brokers and Instances are gone",
        description="What `helm uninstall` runs first (the chart's pre-delete hook): delete "
        "the Configurations, let the running agents and controller remove brokers and "
        "Instances, and after TIMEOUT remove the Instances' slots finalizer as a last resort.",
    )
    parser.add_argument(
        "--namespace", help="only this namespace's Configurations (default: all namespaces)"
    )
    _add_api_options(
        parser, "how long to wait before releasing Instances (e.g. 90s, 2m; default: %(default)gs)"
    )
    parser.set_defaults(run=_run_cleanup)


def _run_apply(args: argparse.Namespace) -> int:
    # Imported here: the API client is not needed by the other commands.
    import yaml

    from akri.controller.apply import apply
    from akri.kube import connect

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", force=True)

    async def run() -> int:
        documents = [d for d in yaml.safe_load_all(args.file.read_text()) if d]
        async with await connect.api_client(args.kubeconfig) as api:
            applied = await apply(api, documents, args.timeout, args.namespace)
        print(f"akri apply: {', '.join(applied) or 'nothing'} applied")
        return 0

    return _run_api_command("apply", run, (OSError, RuntimeError, ValueError))


def add_apply(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "apply",
        help="create or update the Configurations of a file once the API server admits them",
        description="What the chart's examples hook runs after install and upgrade: the "
        "admission webhook fails closed, so a Configuration written before the controller "
        "serves it is tried again until TIMEOUT; a refusal stops at once.",
    )
    parser.add_argument("file", type=Path, help="a YAML file of Configurations")
    parser.add_argument(
        "--namespace", default="default", help="for documents that name none (default: default)"
    )
    _add_api_options(
        parser, "how long to try while the webhook is not served (default: %(default)gs)"
    )
    parser.set_defaults(run=_run_apply)


def _add_api_options(parser: argparse.ArgumentParser, timeout_help: str) -> None:
    """`--timeout` (what it bounds is the command's to say) and `--kubeconfig`."""
    parser.add_argument(
        "--timeout", type=duration, default=120.0, metavar="DURATION", help=timeout_help
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=os.environ.get("KUBECONFIG") or None,
        help="a kubeconfig file (default: KUBECONFIG, else the Pod's service account)",
    )
