"""The chart installed by the real Helm engine into `akri sim --bare --workloads processes`: two
nodes whose pods run as processes, each in its own network namespace, and no value overridden.

The install command is the one the README and the user guide give; Helm waits for the agent
DaemonSet and the controller Deployment to be Ready (real `akri-agent` and `akri-controller`
processes with the chart's environment, mounts, probes and service accounts, authorized by
RBAC), the debugEcho example reaches Running brokers, every documented kubectl command works
on the result, an upgrade keeps the running brokers' slots, and `helm uninstall` with brokers
running leaves none of the release's objects (its pre-delete hook, `akri cleanup`, has the
agents and controller take brokers and Instances down first). Every call each component made
is one its roles grant, and every grant is used or explained.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from akri.sim.chart import merged
from akri.sim.helm import HelmSession
from tests.chart.docs_commands import commands, helm_install
from tests.chart.helm_render import CHART
from tests.chart.rbac_use import Grant, grants, used
from tests.chart.webhook import refused_at_apply
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually, needs_pod_network

pytestmark = [
    pytest.mark.slow,
    needs_kubectl,
    needs_pod_network,
]
BROKERS = 4  # 2 debugEcho devices x 2 nodes
INSTANCE_LABEL = "app.kubernetes.io/instance"


@dataclass(frozen=True)
class Sim:
    kubeconfig: Path
    url: str


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Sim]:
    """`akri sim --bare --workloads processes` on two nodes, as a user starts it for Helm."""
    kubeconfig = socket_dir / "kubeconfig"
    sim = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "akri.cli", "sim", "--bare", "--workloads", "processes",
        "--nodes", "2", "--kubeconfig", str(kubeconfig), "--workdir", str(socket_dir / "w"),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        banner = await asyncio.wait_for(sim.stdout.readuntil(b"Stop with Ctrl-C."), 120)
        (url,) = re.findall(r"API server  (\S+)", banner.decode())
        yield Sim(kubeconfig, url)
    finally:
        sim.send_signal(signal.SIGINT)
        await asyncio.wait_for(sim.communicate(), 60)
    assert sim.returncode == 0


async def items(kubectl: Kubectl, *args: str) -> list[dict[str, Any]]:
    listed: list[dict[str, Any]] = json.loads(await kubectl("get", *args, "-o", "json"))["items"]
    return listed


# Grants the run above may not use, and why each is still needed.
NOT_ALWAYS_USED: dict[str, dict[Grant, str]] = {
    "agent": {
        Grant("", "events", "create"): "Warning Events on a Configuration with a problem on "
        "this node (agent/status.py) and on pods whose slots conflict (plugins/reclaim.py)",
        Grant("akri.sh", "instances", "get"): "a guarded write reads the Instance again "
        "after a 409 (akri.kube.guarded): only when two writers race",
        Grant("akri.sh", "instances", "delete"): "the agent of the last node that saw a "
        "device deletes its Instance once the device is gone (publisher.py)",
        Grant("akri.sh", "instances/status", "update"): "slot conflict conditions "
        "(plugins/reclaim.py): only when two holders claim one slot",
        Grant("", "pods", "get"): "whether the pods that used a slot ended, to free it before "
        "the reclaim grace (plugins/reclaim.py): only once a round saw the slot in use",
    },
    "controller": {
        Grant("", "services", "update"): "a Configuration's service spec edited while its "
        "Services exist (controller/services.py)",
        Grant("", "services", "delete"): "a service spec removed from a Configuration; "
        "Services of deleted Instances go by their owner references",
        Grant("akri.sh", "configurations", "get"): "a guarded status write reads the "
        "Configuration again after a 409 (akri.kube.guarded)",
        Grant("akri.sh", "instances", "get"): "node loss: a guarded write re-reads the "
        "Instance after a 409 (controller/node_loss.py)",
        Grant("akri.sh", "instances", "update"): "node loss: a lost node is taken out of "
        "nodes and its slots freed (controller/node_loss.py)",
        Grant("akri.sh", "instances", "delete"): "node loss: an Instance no node sees any "
        "more is deleted (controller/node_loss.py)",
        Grant("batch", "jobs", "create"): "brokers of Configurations with a brokerJobSpec "
        "(the debugEcho example has a brokerPodSpec)",
        Grant("batch", "jobs", "delete"): "Job brokers of Instances that are gone",
    },
    "cleanup": {
        Grant("akri.sh", "instances", "patch"): "the last resort: the slots finalizer of "
        "Instances still there after cleanup.timeout (tests/controller/test_controller_uninstall"
        ".py)",
    },
}


COMPONENTS = ("agent", "controller", "cleanup")


async def ca_bundle(kubectl: Kubectl) -> str:
    (registration,) = await items(
        kubectl, "validatingwebhookconfigurations", "-l", f"{INSTANCE_LABEL}=akri"
    )
    bundle: str = registration["webhooks"][0]["clientConfig"].get("caBundle", "")
    return bundle


def account(namespace: str, component: str) -> str:
    return f"system:serviceaccount:{namespace}:akri-{component}"


async def access_log(cluster: Sim) -> list[dict[str, Any]]:
    url = f"{cluster.url}/_sim/access"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        calls: list[dict[str, Any]] = await response.json()
    return calls


async def granted(kubectl: Kubectl) -> dict[str, set[Grant]]:
    """Each component's grants, from the roles as installed."""
    roles = await items(kubectl, "clusterroles,roles", "-A", "-l", f"{INSTANCE_LABEL}=akri")
    return {
        component: grants(
            rule
            for role in roles
            if role["metadata"]["labels"]["app.kubernetes.io/component"] == component
            for rule in role["rules"]
        )
        for component in COMPONENTS
    }


def rbac_was_exact(
    roles: dict[str, set[Grant]],
    calls: list[dict[str, Any]],
    namespace: str,
    explained_by_component: dict[str, dict[Grant, str]],
) -> None:
    """Every call each component made is one its roles grant (refused ones too: during the
    uninstall a terminating pod outlives its binding, as on a real cluster), and every grant
    was used by a call or is named in NOT_ALWAYS_USED with the reason."""
    excess: dict[str, list[Any]] = {}
    refused: dict[str, list[Any]] = {}
    for component in COMPONENTS:
        made = [c for c in calls if c["user"] == account(namespace, component)]
        assert made, f"no calls of the {component} recorded"
        mine = roles[component]
        refused[component] = [c for c in made if not used(mine, [{**c, "allowed": True}])]
        explained = explained_by_component.get(component, {})
        assert explained.keys() <= mine, f"{component}: explained grants no role has"
        everything = [{**c, "allowed": True} for c in made]
        excess[component] = sorted(mine - used(mine, everything) - explained.keys())
    nothing: dict[str, list[Any]] = {component: [] for component in COMPONENTS}
    assert refused == nothing, f"calls no role grants: {refused}"
    assert excess == nothing, f"grants no call used: {excess}"


@pytest.mark.timeout(600)
async def test_the_documented_install_runs_brokers_survives_an_upgrade_and_uninstalls_cleanly(
    cluster: Sim, tmp_path: Path
) -> None:
    documented = commands()
    (command,) = {tuple(c) for c in documented if c[:2] == ["helm", "install"]}  # maybe twice
    install = helm_install(list(command))
    kubectl = Kubectl(cluster.kubeconfig, tmp_path, namespace=install.namespace)
    values = install.values
    async with HelmSession(cluster.kubeconfig, CHART) as helm:
        installed = await helm("install", install.release, install.namespace, values)
        assert installed == {"ok": {"status": "deployed"}}, installed

        async def running_brokers() -> list[dict[str, Any]] | None:
            pods = await items(kubectl, "pods", "-A", "-l", "akri.sh/configuration")
            running = [p for p in pods if p.get("status", {}).get("phase") == "Running"]
            return running if len(running) == BROKERS else None

        brokers = await eventually(running_brokers, "Running debugEcho brokers", 60)
        usage = {
            i["metadata"]["name"]: i["spec"]["deviceUsage"]
            for i in await items(kubectl, "akrii", "-A")
        }
        assert sum(1 for u in usage.values() for holder in u.values() if holder) == BROKERS

        for words in documented:
            if words[0] == "kubectl":
                await kubectl(*words[1:])
            # the `akri` commands: tests/chart/test_docs_commands.py

        trusted = await ca_bundle(kubectl)
        assert trusted, "the controller put its CA into the webhook registration"
        await refused_at_apply(kubectl, tmp_path)

        upgraded = await helm(
            "upgrade", install.release, install.namespace, merged(values, {"logLevel": "DEBUG"})
        )
        assert upgraded == {"ok": {"status": "deployed"}}, upgraded
        after = await running_brokers()
        assert after is not None
        assert {p["metadata"]["uid"] for p in after} == {p["metadata"]["uid"] for p in brokers}
        kept = {
            i["metadata"]["name"]: i["spec"]["deviceUsage"]
            for i in await items(kubectl, "akrii", "-A")
        }
        assert kept == usage, "the upgrade moved or freed slots of running brokers"
        assert await ca_bundle(kubectl) == trusted, "the certificate outlives upgrades"
        await refused_at_apply(kubectl, tmp_path)

        roles = await granted(kubectl)
        users = {account(install.namespace, component) for component in COMPONENTS}
        so_far = [c for c in await access_log(cluster) if c["user"] in users]
        assert [c for c in so_far if not c["allowed"]] == [], "refused while installed"

        # Brokers running: the pre-delete hook (akri cleanup) takes them down first.
        uninstalled = await helm("uninstall", install.release, install.namespace)
        assert "error" not in uninstalled, uninstalled

    await uninstalled_cleanly(cluster, kubectl, roles, install.namespace)


async def uninstalled_cleanly(
    cluster: Sim,
    kubectl: Kubectl,
    roles: dict[str, set[Grant]],
    namespace: str,
    explained: dict[str, dict[Grant, str]] = NOT_ALWAYS_USED,
) -> None:
    """Nothing of the release left, and its RBAC exact over the whole run."""

    async def nothing_left() -> bool | None:
        kinds = "all,akric,akrii,serviceaccounts,roles,rolebindings,poddisruptionbudgets"
        left = await items(kubectl, kinds, "-A", "-l", f"{INSTANCE_LABEL}=akri")
        cluster_wide = await items(
            kubectl, "clusterroles,clusterrolebindings", "-l", f"{INSTANCE_LABEL}=akri"
        )
        instances = await items(kubectl, "akrii", "-A")
        brokers_left = await items(kubectl, "pods", "-A", "-l", "akri.sh/configuration")
        return not (left or cluster_wide or instances or brokers_left) or None

    await eventually(nothing_left, "nothing of the release left", 60)
    calls = await access_log(cluster)
    hook = [c for c in calls if c["user"] == account(namespace, "cleanup")]
    assert [c for c in hook if not c["allowed"]] == []
    rbac_was_exact(roles, calls, namespace, explained)


# DRA mode: what the device-plugin run does not use either, and DRA's own.
SLICES = "resourceslices"
LOCAL_POOL = "this node's pool of local devices (agent/dra_slices.py); debugEcho's are shared"
DRA_NOT_ALWAYS_USED: dict[str, dict[Grant, str]] = {
    "agent": {
        **NOT_ALWAYS_USED["agent"],
        Grant("akri.sh", "instances", "update"): "a node joining or leaving an Instance "
        "(publisher.py); here one node saw both devices from the start, and claims hold slots",
        **{Grant("resource.k8s.io", SLICES, v): LOCAL_POOL for v in ("create", "update", "delete")},
    },
    "controller": {
        **NOT_ALWAYS_USED["controller"],
        Grant("", "pods", "delete"): "a broker whose Instance or node is gone or whose spec "
        "changed (brokers.py); here they went with their Instances, by owner reference",
        Grant("resource.k8s.io", "deviceclasses", "update"): "a Configuration edited "
        "(controller/dra.py)",
        Grant(
            "coordination.k8s.io", "leases", "update", "akri-controller"
        ): "the leader renews its Lease every "
        "5 s (controller/leader.py); this run can end before the first renewal",
        Grant("resource.k8s.io", SLICES, "update"): "a shared pool whose devices or nodes "
        "change (controller/dra.py)",
    },
    "cleanup": NOT_ALWAYS_USED["cleanup"],
}


@pytest.mark.timeout(600)
async def test_dra_mode_prepares_a_claim_with_exactly_the_rights_the_chart_grants(
    cluster: Sim, tmp_path: Path
) -> None:
    """mode=dra: the agent publishes its node's devices, the controller the DeviceClass and the
    brokers (each with a claim template), and a pod asking for the Configuration's resource
    gets a claim; the agent's kubelet plugin prepares the claims;
    every call is granted, every DRA grant used (or explained), and uninstall leaves nothing."""
    kubectl = Kubectl(cluster.kubeconfig, tmp_path, namespace="akri")
    example = {"enabled": True, "capacity": 3}  # a slot left for the user beside 4 brokers
    values = {"mode": "dra", "agent": {"embedDebugEcho": True}, "examples": {"debugEcho": example}}
    user_pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "user", "namespace": "akri"},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": "busybox",
                    "resources": {"limits": {"akri.sh/akri-debug-echo-foo": "1"}},
                }
            ]
        },
    }
    manifest = tmp_path / "user.json"
    manifest.write_text(json.dumps(user_pod))
    async with HelmSession(cluster.kubeconfig, CHART) as helm:
        installed = await helm("install", "akri", "akri", values)
        assert installed == {"ok": {"status": "deployed"}}, installed
        await kubectl("apply", "-f", str(manifest))

        async def running() -> bool:
            pods = await items(kubectl, "pods")
            phases = {p["metadata"]["name"]: p.get("status", {}).get("phase") for p in pods}
            brokers = [p for p in pods if "akri.sh/instance" in p["metadata"].get("labels", {})]
            return (
                phases.get("user") == "Running"
                and len(brokers) == BROKERS
                and all(phases[b["metadata"]["name"]] == "Running" for b in brokers)
            )

        await eventually(running, "the DRA pod and the brokers running", 60)
        assert await items(kubectl, "resourceclaims"), "the scheduler made its claim"
        roles = await granted(kubectl)
        await kubectl("delete", "pod", "user")
        uninstalled = await helm("uninstall", "akri", "akri")
        assert "error" not in uninstalled, uninstalled
    await uninstalled_cleanly(cluster, kubectl, roles, "akri", DRA_NOT_ALWAYS_USED)
