"""`akri sim`: the whole cluster in one process, as a subcommand of `akri` (entry point `sim`)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from akri.commands import EXIT_USAGE, Subparsers, duration
from akri.durations import OFFLINE_GRACE_S


def _run(args: argparse.Namespace) -> int:
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


def add(subparsers: Subparsers) -> None:
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
        type=duration,
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
    parser.set_defaults(run=_run)
