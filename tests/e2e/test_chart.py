"""The chart installed by the real Helm engine into the rig, and the agent and controller
programs run with its service accounts' tokens (TokenRequest) and the environment its
DaemonSet and Deployment give them: the chart's RBAC is exactly what they get. Its example
debugEcho Configuration must reach Instances on both nodes, a Running broker per Instance and
node, a Service per Instance, and the webhook's caBundle, all with no request refused.

The chart's own pods are kept off the hollow nodes (their containers would run nothing); the
programs run here in their place, pointed at the rig's kubelet directories.
"""

from __future__ import annotations

import asyncio
import re
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio import client

from akri import naming
from akri.dra.mode import Mode
from akri.sim.helm import HelmSession
from tests.chart.helm_render import CHART, render
from tests.e2e import programs
from tests.e2e.conftest import TOKEN_HOLDER, Akri
from tests.e2e.kube import HOSTNAME
from tests.support import eventually

pytestmark = pytest.mark.timeout(400)
DEADLINE_S = 120.0
RELEASE = "akri"
EXAMPLE = "akri-debug-echo-foo"
NOWHERE = {HOSTNAME: "akri-e2e-no-such-node"}
EXAMPLES = {"debugEcho": {"enabled": True, "brokerImage": "busybox"}}
VALUES = {
    "agent": {"embedDebugEcho": True, "nodeSelector": NOWHERE},
    "controller": {"nodeSelector": NOWHERE},
    # Its hook Jobs (examples after install, clean-up before delete) would never end: a hollow
    # node runs no container code. The examples are applied here as their hook applies them.
    "examples": {"debugEcho": {"enabled": False}},
    "cleanup": {"enabled": False},
    # The rig has no Service network, so the API server cannot reach the webhook behind its
    # Service: the documented escape hatch (the admission policies still hold).
    "webhook": {"failurePolicy": "Ignore"},
}
REFUSED = re.compile(r"API error 403|Forbidden|forbidden")  # as akri.kube.calls.describe words it


def example_configurations(namespace: str, path: Path) -> Path:
    """The Configurations the chart's examples hook applies (its ConfigMap's file), rendered
    by the chart with the examples on."""
    values = {**VALUES, "examples": EXAMPLES}
    (result,) = render([{"release": namespace, "values": values}]).values()
    assert "manifest" in result, result
    for document in yaml.safe_load_all(result["manifest"]):
        if (
            document
            and document["kind"] == "ConfigMap"
            and "configurations.yaml" in (document.get("data") or {})
        ):
            path.write_text(document["data"]["configurations.yaml"])
            return path
    raise AssertionError("the chart rendered no examples ConfigMap")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def token_kubeconfig(akri: Akri, account: str, path: Path, node: str = "") -> Path:
    """A kubeconfig holding a fresh token of the service account, as its pods would get. On a
    `node`, the token is bound to a pod of the account there, as an agent pod's is: the API
    server then names the node in it, which the chart's admission policy for agents requires."""
    core = akri.kube.core
    body: Any = {"spec": {"expirationSeconds": 3600}}  # a dict: the client sends it as is
    if node:
        stand_in: Any = {
            "metadata": {"name": f"{account}-{node}", "labels": TOKEN_HOLDER},
            "spec": {
                "nodeName": node,
                "serviceAccountName": account,
                "containers": [{"name": "agent", "image": "busybox"}],
            },
        }
        pod = await core.create_namespaced_pod(akri.namespace, stand_in)
        body["spec"]["boundObjectRef"] = {
            "kind": "Pod", "apiVersion": "v1", "name": pod.metadata.name, "uid": pod.metadata.uid
        }  # fmt: skip
    issued = await core.create_namespaced_service_account_token(account, akri.namespace, body)
    write_kubeconfig(path, akri.rig.kubeconfig, account, issued.status.token)
    return path


def write_kubeconfig(path: Path, admin: Path, user: str, token: str) -> None:
    """`admin`'s cluster (server, CA) with `user`'s bearer token."""
    cluster = yaml.safe_load(admin.read_text())["clusters"][0]["cluster"]
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "rig", "cluster": cluster}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "rig", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config))


def environment(template: client.V1PodTemplateSpec, pod: dict[str, str]) -> dict[str, str]:
    """The container's environment as the kubelet would set it (downward API from `pod`)."""
    (container,) = template.spec.containers
    variables = {}
    for variable in container.env or []:
        if variable.value_from is None:  # an empty value is left out of the stored object
            variables[variable.name] = variable.value or ""
        else:
            variables[variable.name] = pod[variable.value_from.field_ref.field_path]
    return variables


async def test_the_programs_do_their_work_with_the_charts_service_accounts(akri: Akri) -> None:
    apps = client.AppsV1Api(akri.kube.api_client)
    ns = akri.namespace
    async with HelmSession(akri.rig.kubeconfig, CHART) as helm:
        installed = await helm("install", RELEASE, ns, VALUES, wait=False)
        assert "ok" in installed, installed
        akri.configurations.add(EXAMPLE)
        try:
            daemonset = await apps.read_namespaced_daemon_set(f"{RELEASE}-agent", ns)
            deployment = await apps.read_namespaced_deployment(f"{RELEASE}-controller", ns)
            controller_config = await token_kubeconfig(
                akri,
                deployment.spec.template.spec.service_account_name,
                akri.workdir / "controller",
            )
            for name, node in akri.rig.nodes.items():
                agent_config = await token_kubeconfig(
                    akri,
                    daemonset.spec.template.spec.service_account_name,
                    akri.workdir / f"agent-{name}",
                    node=name,
                )
                chart = environment(
                    daemonset.spec.template,
                    {"spec.nodeName": name, "metadata.namespace": ns, "metadata.name": name},
                )
                rig = programs.agent(
                    node, agent_config, ns, akri.workdir, mode=Mode.DEVICE_PLUGIN,
                    shared=True,
                ).variables  # fmt: skip
                here = {k: rig[k] for k in programs.HOST_SPECIFIC if k in rig}
                akri.agents[name] = programs.Program(
                    "akri-agent", chart | here, akri.workdir / f"agent-{name}.log"
                )
            chart = environment(
                deployment.spec.template,
                {"metadata.namespace": ns, "metadata.name": f"{RELEASE}-controller-e2e"},
            )
            webhook_dir = akri.workdir / "webhook"
            webhook_dir.mkdir()
            akri.controller = programs.Program(
                "akri-controller",
                chart
                | {
                    "KUBECONFIG": str(controller_config),
                    "METRICS_PORT": "0",
                    "WEBHOOK_PORT": str(free_port()),
                    "WEBHOOK_CERT_DIR": str(webhook_dir),
                },
                akri.workdir / "controller.log",
            )
            for program in akri.programs():
                await program.start()
            examples = example_configurations(ns, akri.workdir / "examples.yaml")
            applied = await asyncio.create_subprocess_exec(
                str(programs.SCRIPTS / "akri"), "apply", str(examples), "--namespace", ns,
                "--kubeconfig", str(akri.rig.kubeconfig), "--timeout", "2m",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            said, _ = await applied.communicate()
            assert applied.returncode == 0, f"akri apply of the examples failed: {said.decode()}"

            instances = [naming.instance_name(EXAMPLE, d) for d in ("foo0", "foo1")]

            async def discovered() -> bool:
                nodes = sorted(akri.rig.nodes)
                return await akri.kube.instance_nodes() == dict.fromkeys(instances, nodes)

            await eventually(discovered, "the example's Instances on both nodes", DEADLINE_S)
            brokers = [
                naming.broker_pod_name(i, n, shared=True) for i in instances for n in akri.rig.nodes
            ]
            await eventually(
                lambda: akri.kube.running(brokers), f"brokers {brokers} Running", DEADLINE_S
            )
            services = {naming.instance_service_name(i) for i in instances}
            await eventually(
                lambda: has_services(akri, services), f"Services {services}", DEADLINE_S
            )
            await eventually(
                lambda: ca_bundle(akri, f"{RELEASE}-configurations"), "the caBundle", DEADLINE_S
            )
        finally:
            # Cleaned up while the chart's roles still hold, then the release uninstalled
            # whatever became of that (its cluster-wide objects would refuse the next install).
            try:
                await akri.stop()
            finally:
                uninstalled = await helm("uninstall", RELEASE, ns)
    assert "ok" in uninstalled, uninstalled
    for program in akri.programs():
        refused = [line for line in program.log.read_text().splitlines() if REFUSED.search(line)]
        assert not refused, f"{program.script} was refused: {refused}"


async def ca_bundle(akri: Akri, name: str) -> bool:
    admission = client.AdmissionregistrationV1Api(akri.kube.api_client)
    found = await admission.read_validating_webhook_configuration(name)
    return all(w.client_config.ca_bundle for w in found.webhooks)


async def has_services(akri: Akri, names: set[str]) -> bool:
    listed = await akri.kube.core.list_namespaced_service(akri.namespace)
    return names <= {s.metadata.name for s in listed.items}
