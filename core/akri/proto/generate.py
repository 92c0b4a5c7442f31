"""Regenerates the Python modules and typing stubs for every `.proto` file under `akri/proto`.

Generated code is checked in so that a fresh clone imports without a build step; a test
regenerates into a temporary directory and fails on any drift. Protos are compiled with the
source root (`core/`) as include path, so generated imports are absolute (`akri.proto...`)
while the protobuf packages stay as the wire protocols require (`v1beta1`, `v1`, `v0`,
`k8s.io.kubelet.pkg.apis.dra.v1`, `v1alpha1`, `pluginregistration`).

Usage: `python -m akri.proto.generate [--out DIR]` (default: in place, i.e. `make protos`).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from grpc_tools import protoc  # type: ignore[import-untyped]  # ships no stubs

PROTO_PACKAGE_DIR = Path(__file__).resolve().parent
SOURCE_ROOT = PROTO_PACKAGE_DIR.parent.parent
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py", "_pb2_grpc.pyi")
PLUGINS = ("protoc-gen-mypy", "protoc-gen-mypy_grpc")


class GenerationError(RuntimeError):
    """protoc failed or a code generator plugin is missing."""


def proto_sources() -> list[Path]:
    """All `.proto` files of the package, in a stable order."""
    return sorted(PROTO_PACKAGE_DIR.rglob("*.proto"))


def generated_files(root: Path) -> list[Path]:
    """Generated files under `root/akri/proto`, relative to `root`, in a stable order."""
    package = root / PROTO_PACKAGE_DIR.relative_to(SOURCE_ROOT)
    found = (p for suffix in GENERATED_SUFFIXES for p in package.rglob(f"*{suffix}"))
    return sorted(p.relative_to(root) for p in found)


def _plugin_path(name: str) -> str:
    """Prefer the plugin next to this interpreter: a venv need not be on PATH."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise GenerationError(f"{name} not found; install mypy-protobuf")
    return found


def generate(out_root: Path = SOURCE_ROOT) -> list[Path]:
    """Compile every proto into `out_root/akri/proto/...`; return the generated files."""
    out = str(out_root)
    args = [
        "grpc_tools.protoc",
        f"--proto_path={SOURCE_ROOT}",
        f"--python_out={out}",
        f"--grpc_python_out={out}",
        f"--mypy_out={out}",
        f"--mypy_grpc_out={out}",
        *(f"--plugin={name}={_plugin_path(name)}" for name in PLUGINS),
        *(str(source) for source in proto_sources()),
    ]
    if protoc.main(args) != 0:
        raise GenerationError(f"protoc failed: {' '.join(args)}")
    return generated_files(out_root)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=SOURCE_ROOT, help="output source root")
    options = parser.parse_args(argv)
    for path in generate(options.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
