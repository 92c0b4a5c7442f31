"""Stand-in entry point for programs whose issue has not landed yet."""

from __future__ import annotations

import sys


def not_implemented(program: str) -> int:
    """Say so plainly and exit 2, so scripts and probes never mistake it for a working program."""
    print(f"{program}: not implemented yet (see the project's open issues)", file=sys.stderr)
    return 2
