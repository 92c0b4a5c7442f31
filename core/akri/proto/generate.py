"""Regenerates the Python modules and typing stubs for every `.proto` file of a proto tree.

Generated code is checked in so that a fresh clone imports without a build step; a test
regenerates into a temporary directory and fails on any drift. A tree's protos are compiled
with its source root (`core/` for `akri.proto`) as include path, so generated imports are
absolute (`akri.proto...`) while the protobuf packages stay as the wire protocols require
(`v1beta1`, `v1`, `v0`, `k8s.io.kubelet.pkg.apis.dra.v1`, `v1alpha1`, `pluginregistration`).
Another distribution with protos of its own (akri-sim) names its tree and calls `main` with it.

Usage: `python -m akri.proto.generate [--out DIR]` (default: in place, i.e. `make protos`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]  # ships no stubs

GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
PLUGINS = ("protoc-gen-mypy", "protoc-gen-mypy_grpc")


@dataclass(frozen=True)
class ProtoTree:
    """The `.proto` files under `package_dir`, compiled with `source_root` as include path."""

    source_root: Path
    package_dir: Path

    def sources(self) -> list[Path]:
        """All `.proto` files of the tree, in a stable order."""
        return sorted(self.package_dir.rglob("*.proto"))

    def generated_files(self, root: Path) -> list[Path]:
        """Generated files of the tree under `root`, relative to `root`, in a stable order."""
        package = root / self.package_dir.relative_to(self.source_root)
        found = (p for suffix in GENERATED_SUFFIXES for p in package.rglob(f"*{suffix}"))
        return sorted(p.relative_to(root) for p in found)


_HERE = Path(__file__).resolve().parent
CORE = ProtoTree(source_root=_HERE.parent.parent, package_dir=_HERE)


class GenerationError(RuntimeError):
    """protoc failed or a code generator plugin is missing."""


def _plugin_path(name: str) -> str:
    """Prefer the plugin next to this interpreter: a venv need not be on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise GenerationError(f"{name} not found; install mypy-protobuf")
    return found


def generate(tree: ProtoTree = CORE, out_root: Path | None = None) -> list[Path]:
    """Compile every proto of `tree` into `out_root` (default: in place); return the files."""
    out = str(out_root or tree.source_root)
    args = [
        "grpc_tools.protoc",
        f"--proto_path={tree.source_root}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *(f"--plugin={name}={_plugin_path(name)}" for name in PLUGINS),
        *(str(source) for source in tree.sources()),
    ]
    if protoc.main(args) != 0:
        raise GenerationError(f"protoc failed: {' '.join(args)}")
    return tree.generated_files(Path(out))


def main(argv: Sequence[str] | None = None, tree: ProtoTree = CORE) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=tree.source_root, help="output source root")
    options = parser.parse_args(argv)
    for path in generate(tree, options.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
