"""The pod network as `akri sim` makes it (akri.sim.podnet), in a child process: pods on two
nodes reach each other and the API server's Service address, nothing of this machine's
network changes, and nothing of it outlives the process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from akri.sim.podnet.cluster import TOOLS

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(tool) is None for tool in TOOLS),
    reason="needs root and " + ", ".join(TOOLS),
)


def links() -> list[str]:
    listed = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    return sorted(line.split(":")[1].strip().split("@")[0] for line in listed.stdout.splitlines())


def namespaces_in_use() -> set[str]:
    """The network namespaces some process of this machine is in."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.add(os.readlink(entry / "ns" / "net"))
            except OSError:
                continue  # gone meanwhile
    return found


def test_pods_reach_each_other_and_the_api_and_leave_nothing_behind() -> None:
    before = links()
    done = subprocess.run(
        [sys.executable, "-m", "tests.sim.podnet_probe"],
        capture_output=True, text=True, cwd=ROOT, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["addresses"] == ["10.244.0.2", "10.244.1.2"]  # node-0's /24, node-1's /24
    assert seen["links_with_pods"] == ["cni0", "lo", "veth0002", "veth0102"]
    assert seen["pod_to_pod_across_nodes"]
    assert seen["received"] == "hello"
    assert seen["pod_to_api_service"]
    assert seen["own_loopback_only"], "a pod's loopback is its own, not this machine's"
    assert seen["links_after"] == ["cni0", "lo"], "destroyed sandboxes leave no veth"
    assert links() == before, "this machine's network is untouched"
    assert seen["netns"] != os.readlink("/proc/self/ns/net")
    assert seen["netns"] not in namespaces_in_use(), "the cluster's namespace ended with it"
    for pid in seen["pause"]:
        assert not Path("/proc", pid).exists() or pid_is_not_pause(pid)


def pid_is_not_pause(pid: str) -> bool:
    """A reused pid is someone else's: not a pause process of ours."""
    try:
        return b"sleep\x00infinity" not in Path("/proc", pid, "cmdline").read_bytes()
    except OSError:
        return True


WITHOUT_PERMISSION = """
import json, os, socket
from akri.sim.podnet.cluster import Unavailable, enter
before = os.readlink("/proc/self/ns/net")
with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
try:
    enter(2, port)
except Unavailable as why:
    with socket.create_server(("127.0.0.1", port)):  # given back
        pass
    print(json.dumps({"why": str(why), "moved": os.readlink("/proc/self/ns/net") != before}))
"""


def test_without_the_right_to_make_namespaces_nothing_changes_and_it_says_why() -> None:
    """Root without CAP_SYS_ADMIN (a locked-down container): `enter` refuses, the process stays
    in this machine's network and the API port is free again."""
    done = subprocess.run(
        ["setpriv", "--bounding-set", "-sys_admin", "--", sys.executable, "-c", WITHOUT_PERMISSION],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "why": "[Errno 1] unshare: Operation not permitted",
        "moved": False,
    }


GATEWAY_MAC_PROBE = """
import json, subprocess
from akri.sim.podnet.cluster import _configure

def mac():
    shown = subprocess.run(["ip", "-j", "link", "show", "cni0"], capture_output=True, text=True)
    return json.loads(shown.stdout)[0]["address"]

def run(*argv):
    subprocess.run(["ip", *argv], check=True)

_configure(2)
seen = [mac()]
for n, lowest in enumerate(("02:00:00:00:00:02", "02:00:00:00:00:01")):
    run("link", "add", f"vt{n}", "address", lowest, "type", "veth", "peer", "name", f"vp{n}")
    run("link", "set", f"vt{n}", "master", "cni0", "up")
    seen.append(mac())
run("link", "delete", "vt1")
seen.append(mac())
print(json.dumps(seen))
"""


def test_the_gateway_keeps_its_mac_as_pods_come_and_go() -> None:
    """Issue 27: the controller leader lost its Lease on a quiet sim (TimeoutError renewing).
    The bridge took the lowest MAC of its ports, so a pod's veth joining or leaving changed the
    gateway's MAC under every pod, whose packets to the API server went to the old MAC until
    its ARP entry expired. Here veths with ever lower MACs join and leave the bridge."""
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", GATEWAY_MAC_PROBE],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert len(set(seen)) == 1, seen
