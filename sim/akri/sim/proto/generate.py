"""Regenerates the simulator's protos with the product's generator (see `akri.proto.generate`).

Usage: `python -m akri.sim.proto.generate [--out DIR]` (default: in place, i.e. `make protos`).
"""

from __future__ import annotations

import sys
from pathlib import Path

from akri.proto.generate import ProtoTree, main

_HERE = Path(__file__).resolve().parent
TREE = ProtoTree(source_root=_HERE.parents[2], package_dir=_HERE)

if __name__ == "__main__":
    sys.exit(main(tree=TREE))
