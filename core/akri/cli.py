"""The `akri` command line: local cluster, CRDs and naming helpers for operators."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import version


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="akri", description=__doc__)
    parser.add_argument("--version", action="version", version=f"akri-py {version('akri-py')}")
    parser.parse_args(argv)
    return 0


if __name__ == "__main__":
    sys.exit(main())
