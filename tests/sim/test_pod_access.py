"""Reaching a pod of the process runtime as a user does: kubectl exec, port-forward, logs -f and
the API server's pod and Service proxy, all with the real kubectl against `akri sim`."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from akri.sim.cluster import Cluster, RuntimeOptions
from tests.kubectl import Kubectl, needs_kubectl
from tests.sim.test_process_runtime import apply, pod
from tests.support import DEADLINE_S, eventually

pytestmark = [
    needs_kubectl,
    pytest.mark.skipif(
        os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
    ),
]
# Served by the pod: its port and a page only that pod has.
PORT = 18080
PAGE = "served-by-the-pod"


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    """One node running a web pod with a Service in front of it."""
    workdir = socket_dir
    options = RuntimeOptions(backoff_initial_s=0.2, backoff_max_s=1.0)
    async with Cluster(["node-0"], workdir=workdir, processes=options) as running:
        kubectl = Kubectl(running.kubeconfig, workdir)
        web = pod(
            "web",
            {
                "command": ["sh", "-c", f"cd $(mktemp -d) && echo {PAGE} > page && "
                            f"exec python3 -m http.server {PORT}"],
                "ports": [{"name": "http", "containerPort": PORT}],
                "readinessProbe": {"tcpSocket": {"port": PORT}, "periodSeconds": 1},
            },
        )  # fmt: skip
        web["metadata"]["labels"] = {"app": "web"}
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80,
                                                             "targetPort": "http"}]},
        }  # fmt: skip
        await apply(kubectl, workdir, web, service)
        await kubectl("wait", "--for=condition=Ready", "pod/web", "--timeout=30s", deadline_s=35)
        yield running


@pytest.fixture
def kubectl(cluster: Cluster, tmp_path: Path) -> Kubectl:
    return Kubectl(cluster.kubeconfig, tmp_path)


async def test_the_pod_and_service_proxy_reach_the_pods_port(kubectl: Kubectl) -> None:
    by_pod = await kubectl("get", "--raw", f"/api/v1/namespaces/default/pods/web:{PORT}/proxy/page")
    assert by_pod.strip() == PAGE
    by_name = await kubectl(
        "get", "--raw", "/api/v1/namespaces/default/services/web:http/proxy/page"
    )
    assert by_name.strip() == PAGE
    closed = await kubectl("get", "--raw", "/api/v1/namespaces/default/pods/web:1/proxy/", ok=False)
    assert "error trying to reach service" in closed


async def test_kubectl_exec_runs_in_the_container_with_its_output_input_and_exit_code(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    code, out, err = await kubectl.result(
        "exec", "web", "--", "sh", "-c", "echo $HOSTNAME; echo to-stderr >&2; exit 3"
    )
    assert (code, out.strip()) == (3, "web")  # the container's env
    assert "to-stderr" in err
    process = await asyncio.create_subprocess_exec(
        "kubectl", "exec", "-i", "web", "--", "wc", "-c", env=kubectl.env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(DEADLINE_S):
        counted, _ = await process.communicate(b"12345")
    assert counted.decode().strip() == "5"
    refused = await kubectl("exec", "web", "-c", "other", "--", "true", ok=False)
    assert "container other is not valid for pod web" in refused


async def test_kubectl_port_forward_reaches_the_pods_port(kubectl: Kubectl) -> None:
    forward = await kubectl.spawn("port-forward", "pod/web", f":{PORT}")
    try:
        assert forward.stdout is not None
        async with asyncio.timeout(DEADLINE_S):
            line = (await forward.stdout.readline()).decode()
        local = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert local, line
        async with aiohttp.ClientSession() as session:
            for _ in range(2):  # two connections over one forwarding session
                async with session.get(f"http://127.0.0.1:{local[1]}/page") as answer:
                    assert (await answer.text()).strip() == PAGE
    finally:
        forward.terminate()
        await forward.wait()


async def test_kubectl_logs_follows_a_container_until_it_ends(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    go = tmp_path / "go"  # the container writes its second line once this exists
    script = f"echo one; while [ ! -e {go} ]; do sleep 0.1; done; echo two"
    ticking = pod("ticking", {"command": ["sh", "-c", script]})
    ticking["spec"]["restartPolicy"] = "Never"
    await apply(kubectl, tmp_path, ticking)

    async def running() -> bool:
        found = json.loads(await kubectl("get", "pod", "ticking", "-o", "json"))
        statuses = found.get("status", {}).get("containerStatuses") or [{}]
        return "running" in (statuses[0].get("state") or {})

    await eventually(running, "ticking to run")
    follower = await kubectl.spawn("logs", "-f", "ticking")
    assert follower.stdout is not None
    async with asyncio.timeout(DEADLINE_S):
        assert (await follower.stdout.readline()).strip() == b"one"
        go.touch()
        rest, _ = await follower.communicate()
    assert rest.split() == [b"two"]


async def test_what_the_sim_does_not_serve_says_so(kubectl: Kubectl) -> None:
    attach = await kubectl("attach", "web", ok=False)
    assert "not supported by akri sim" in attach
    node = await kubectl("get", "--raw", "/api/v1/nodes/node-0/proxy/metrics", ok=False)
    assert "not supported by akri sim" in node
