"""How a distribution adds a subcommand to `akri`, and the argument types subcommands share.

A distribution names a function in the `akri.commands` entry point group (the entry point's
name is the subcommand's): `add(subparsers)` adds the subcommand's parser and sets `run`, which
returns the exit code: 0 success, 1 failure, 2 usage error (argparse's own).
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from akri.durations import parse_duration

GROUP = "akri.commands"
EXIT_USAGE = 2

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def duration(value: str) -> float:
    """An argparse type: a duration such as 90s or 2m, in seconds."""
    try:
        return parse_duration(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
