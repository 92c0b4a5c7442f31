"""The `akri` command line: local cluster, CRDs and naming helpers for operators.

Each subcommand is one `_add_*` function that adds its parser and sets `run`; `COMMANDS` lists
them. `run` returns the exit code: 0 success, 1 failure, 2 usage error (argparse's own).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeAlias

from akri.api import crd_files
from akri.durations import OFFLINE_GRACE_S, parse_duration
from akri.kube import lean
from akri.naming import instance_name, object_name_problem, resource_name_problem
from akri.settings import command_line

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
EXIT_USAGE = 2


def _run_crds(args: argparse.Namespace) -> int:
    files = crd_files()
    if args.write is None:
        sys.stdout.write("---\n".join(files.values()))
        return 0
    try:
        args.write.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (args.write / name).write_text(text)
    except OSError as error:
        print(f"akri crds: cannot write {args.write}: {error}", file=sys.stderr)
        return 1
    return 0


def _add_crds(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "crds",
        help="print the CustomResourceDefinitions",
        description="Print the Configuration and Instance CRDs as one multi-document YAML.",
    )
    parser.add_argument(
        "--write", metavar="DIR", type=Path, help="write one file per CRD into DIR instead"
    )
    parser.set_defaults(run=_run_crds)


def _run_instance_name(args: argparse.Namespace) -> int:
    name = instance_name(args.configuration, args.device_id, args.node)
    if problem := resource_name_problem(name):
        print(
            f"akri instance-name: {problem}: the agent refuses this Configuration "
            "(its devices cannot be advertised); choose a shorter Configuration name",
            file=sys.stderr,
        )
        return EXIT_USAGE
    print(name)
    return 0


def _non_empty(value: str) -> str:
    if not value:
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def _object_name(value: str) -> str:
    if problem := object_name_problem(value):
        raise argparse.ArgumentTypeError(problem)
    return value


def _add_instance_name(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "instance-name",
        help="name of the Instance a device becomes",
        description="Print the name of the Instance that a discovered device becomes.",
    )
    parser.add_argument("configuration", type=_object_name, help="name of the Configuration")
    parser.add_argument("device_id", type=_non_empty, help="device id reported by the handler")
    parser.add_argument(
        "--node",
        type=_object_name,
        help="node that discovered a local (not shared) device; omit for shared devices",
    )
    parser.set_defaults(run=_run_instance_name)


def _run_sim(args: argparse.Namespace) -> int:
    # grpc's own INFO lines (a connection told to go away as the nodes stop) are not news to
    # a user; set before grpc is loaded, unless the user asked for them.
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")
    # Imported here: the simulator pulls in aiohttp and grpc, which `akri crds` does not need.
    from akri.dra.mode import Mode
    from akri.sim.chart import example_beside
    from akri.sim.cluster import node_names
    from akri.sim.main import CHART_FALLBACK, pod_network, run

    try:
        nodes = node_names(args.nodes)
    except ValueError as error:
        print(f"akri sim: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.chart is not None and args.bare:
        print("akri sim: --chart installs akri, --bare runs no akri: choose one", file=sys.stderr)
        return EXIT_USAGE
    if args.chart is not None and not (args.chart / "Chart.yaml").is_file():
        print(
            f"akri sim: --chart {args.chart}: not a Helm chart directory (no Chart.yaml there)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    # force: onvif-zeep-async configures the root logger (INFO) when it is imported.
    logging.basicConfig(
        level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=True
    )
    try:
        network = None
        if args.chart is not None:
            network = pod_network(len(nodes), args.port, CHART_FALLBACK)
        elif args.workloads == "processes":
            network = pod_network(len(nodes), args.port, "its pods share this machine's network")
        manifests = list(args.apply)
        if args.chart is not None and network is None:
            manifests.append(example_beside(args.chart))
        return asyncio.run(
            run(
                nodes,
                port=args.port,
                kubeconfig=args.kubeconfig.resolve(),
                workdir=args.workdir,
                manifests=manifests,
                akri=not args.bare,
                offline_grace=args.offline_grace,
                mode=Mode(args.mode),
                processes=args.workloads == "processes",
                chart=args.chart if network is not None else None,
                network=network,
            )
        )
    except (OSError, ValueError, RuntimeError) as error:
        print(f"akri sim: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # before the simulator handles Ctrl-C itself: nothing runs yet
        print("akri sim: stopping", file=sys.stderr)
        return 0


def _duration(value: str) -> float:
    try:
        return parse_duration(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _add_sim(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "sim",
        help="run a local cluster with akri (API server, nodes, agents, controller)",
        description="Run a whole cluster in one process until interrupted: an emulated "
        "Kubernetes API server, simulated nodes with kubelet emulators, a scheduler, an akri "
        "agent per node (with an embedded debugEcho handler) and the akri controller.",
    )
    parser.add_argument(
        "--nodes", default="2", help="a node count (node-0, node-1, ...) or comma-separated names"
    )
    parser.add_argument("--port", type=int, default=0, help="API server port (0: any free port)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=Path(".akri-sim/kubeconfig"),
        help="where to write the kubeconfig for kubectl (default: %(default)s)",
    )
    parser.add_argument(
        "--workdir", type=Path, help="directory for the nodes' sockets (default: a new temp dir)"
    )
    parser.add_argument(
        "--apply",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a manifest to create once the cluster runs (repeatable)",
    )
    parser.add_argument(
        "--bare",
        action="store_true",
        help="run the cluster alone, without the akri agents and controller",
    )
    parser.add_argument(
        "--offline-grace",
        type=_duration,
        default=OFFLINE_GRACE_S,
        metavar="DURATION",
        help="how long a device may be missing on a node before the node leaves its Instance "
        "(the agents' OFFLINE_GRACE; e.g. 30s, 5m; default: %(default)gs)",
    )
    parser.add_argument(
        "--mode",
        choices=("device-plugin", "dra", "auto"),
        default="device-plugin",
        help="how agents offer devices: kubelet device plugins or Dynamic Resource Allocation "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--workloads",
        choices=("in-process", "processes"),
        default="in-process",
        help="how akri runs: agents and controller inside the simulator, or (processes, needs "
        "root) as a cluster runs it, an agent DaemonSet and a controller Deployment whose pods "
        "of the project's image (AKRI_SIM_IMAGE) the simulated kubelets run as real processes, "
        "each pod with its own network where it can be made (default: %(default)s)",
    )
    parser.add_argument(
        "--chart",
        type=Path,
        metavar="DIR",
        help="install this Helm chart (helm/akri) with the real Helm engine (helm-sdkpy) as "
        "release akri in namespace akri, with the debugEcho example, instead of running akri "
        "inside the simulator: its agent DaemonSet and controller Deployment run as real "
        "processes, each pod with its own network (needs root, unshare, nsenter, setpriv and "
        "ip; elsewhere akri runs inside the simulator with crds/examples/debugEcho.yaml)",
    )
    parser.add_argument(
        "--log-level", default="WARNING", help="logging level (default: %(default)s)"
    )
    parser.set_defaults(run=_run_sim)


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


def _add_cleanup(subparsers: Subparsers) -> None:
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
    parser.add_argument(
        "--timeout",
        type=_duration,
        default=120.0,
        metavar="DURATION",
        help="how long to wait before releasing Instances (e.g. 90s, 2m; default: %(default)gs)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=os.environ.get("KUBECONFIG") or None,
        help="a kubeconfig file (default: KUBECONFIG, else the Pod's service account)",
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


def _add_apply(subparsers: Subparsers) -> None:
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
    parser.add_argument(
        "--timeout",
        type=_duration,
        default=120.0,
        metavar="DURATION",
        help="how long to try while the webhook is not served (default: %(default)gs)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        default=os.environ.get("KUBECONFIG") or None,
        help="a kubeconfig file (default: KUBECONFIG, else the Pod's service account)",
    )
    parser.set_defaults(run=_run_apply)


COMMANDS: tuple[Callable[[Subparsers], None], ...] = (
    _add_crds,
    _add_instance_name,
    _add_sim,
    _add_cleanup,
    _add_apply,
)


def _arguments(root: argparse.ArgumentParser) -> None:
    root.add_argument("--version", action="version", version=f"akri-py {version('akri-py')}")
    subparsers = root.add_subparsers(metavar="COMMAND", required=True)
    for add in COMMANDS:
        add(subparsers)


def main(argv: Sequence[str] | None = None) -> int:
    lean.install()  # the commands import kubernetes-asyncio when they run: see akri.kube.lean
    args = command_line("akri", __doc__.splitlines()[0], argv=argv, arguments=_arguments)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
