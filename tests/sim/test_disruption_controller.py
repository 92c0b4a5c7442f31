"""The simulated disruption controller keeps a PodDisruptionBudget's status current."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes_asyncio import client

from akri.sim.cluster import Cluster, load_client
from tests.support import eventually

LABELS = {"app": "web"}


def deployment() -> Any:  # a manifest, as a user's program sends one
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "main", "image": "busybox:1"}]},
            },
        },
    }


async def test_budget_allows_disruptions_while_enough_pods_are_ready(socket_dir: Path) -> None:
    async with Cluster(["node-0"], workdir=socket_dir) as cluster:
        api = await load_client(cluster.kubeconfig)
        async with api:
            apps, core, policy = (
                client.AppsV1Api(api),
                client.CoreV1Api(api),
                client.PolicyV1Api(api),
            )
            await apps.create_namespaced_deployment("default", deployment())
            budget: Any = {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "web"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": LABELS}},
            }
            await policy.create_namespaced_pod_disruption_budget("default", budget)

            async def status() -> Any:
                read = await policy.read_namespaced_pod_disruption_budget_status("web", "default")
                return read.status

            async def allowing(count: int) -> Any:
                now = await status()
                return now if now.disruptions_allowed == count and now.current_healthy else None

            healthy = await eventually(lambda: allowing(1), "one disruption allowed")
            assert (healthy.expected_pods, healthy.current_healthy, healthy.desired_healthy) == (
                2, 2, 1,
            )  # fmt: skip
            assert healthy.observed_generation == 1
            condition = healthy.conditions[0]
            assert (condition.type, condition.status, condition.reason) == (
                "DisruptionAllowed", "True", "SufficientPods",
            )  # fmt: skip

            pods = await core.list_namespaced_pod("default", label_selector="app=web")
            failing = pods.items[0].metadata.name
            not_ready = {"type": "Ready", "status": "False", "reason": "ContainersNotReady"}
            await core.patch_namespaced_pod_status(  # the kubelet reporting a failed probe
                failing, "default", {"status": {"conditions": [not_ready]}}
            )

            async def blocked() -> Any:
                now = await status()
                return now if now.current_healthy == 1 else None

            short = await eventually(blocked, "the budget to see the pod not ready")
            assert (short.disruptions_allowed, short.desired_healthy) == (0, 1)
            assert (short.conditions[0].status, short.conditions[0].reason) == (
                "False", "InsufficientPods",
            )  # fmt: skip
