"""The `akri` command line: local cluster, CRDs and naming helpers for operators.

`crds` and `instance-name` are core's own: one `_add_*` function each adds its parser and sets
`run`. The others come from the installed distributions through the `akri.commands` entry
points (`akri.commands` says how): `apply` and `cleanup` from akri-py's controller, `sim` from
akri-sim. `run` returns the exit code: 0 success, 1 failure, 2 usage error (argparse's own).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points, version
from pathlib import Path

from akri.api import crd_files
from akri.commands import EXIT_USAGE, GROUP, Subparsers
from akri.kube import lean
from akri.naming import instance_name, object_name_problem, resource_name_problem
from akri.settings import command_line

# Subcommands another distribution brings: asked for where it is not installed, each says where
# to get it instead of argparse's "invalid choice".
ELSEWHERE = {"sim": ("akri-sim", "pip install akri-sim (in a clone of akri-py: pip install ./sim)")}


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


CORE_COMMANDS: tuple[Callable[[Subparsers], None], ...] = (_add_crds, _add_instance_name)


def _add_not_installed(subparsers: Subparsers, name: str, distribution: str, how: str) -> None:
    """A hidden subcommand that takes any arguments (even `--help`) and says where it comes from."""
    message = f"akri {name} comes with the {distribution} distribution: {how}"

    def run(_: argparse.Namespace) -> int:
        print(message, file=sys.stderr)
        return 1

    # No `help`: not listed. A prefix no argument starts with: `--help` and options are words.
    parser = subparsers.add_parser(name, add_help=False, prefix_chars="\0")
    parser.add_argument("arguments", nargs="*")
    parser.set_defaults(run=run)


def _arguments(root: argparse.ArgumentParser) -> None:
    root.add_argument("--version", action="version", version=f"akri-py {version('akri-py')}")
    subparsers = root.add_subparsers(metavar="COMMAND", required=True)
    for add in CORE_COMMANDS:
        add(subparsers)
    installed = sorted(entry_points(group=GROUP), key=lambda entry: entry.name)
    for entry in installed:
        entry.load()(subparsers)
    names = {entry.name for entry in installed}
    for name, (distribution, how) in ELSEWHERE.items():
        if name not in names:
            _add_not_installed(subparsers, name, distribution, how)


def main(argv: Sequence[str] | None = None) -> int:
    lean.install()  # the commands import kubernetes-asyncio when they run: see akri.kube.lean
    args = command_line("akri", __doc__.splitlines()[0], argv=argv, arguments=_arguments)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
