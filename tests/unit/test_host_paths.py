"""A node's host paths, mapped onto the simulated node's directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from akri.sim.host_paths import local_path, node_host_dirs

ROOT = Path("/tmp/sim/nodes/node-0")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/var/lib/kubelet/device-plugins", ROOT / "device-plugins"),
        ("/var/lib/kubelet/plugins/akri.sh/dra.sock", ROOT / "kubelet/plugins/akri.sh/dra.sock"),
        ("/var/lib/kubelet/plugins_registry/", ROOT / "kubelet/plugins_registry"),
        ("var/lib/akri//x", ROOT / "akri/x"),
        ("/var/lib/kubelet/plugins-other", None),  # a prefix of a name is not its directory
        ("/etc/hosts", None),
    ],
)
def test_node_paths_map_onto_the_node_root(path: str, expected: Path | None) -> None:
    assert local_path(node_host_dirs(ROOT), path) == expected
