"""What a user does and sees on the simulated cluster, through the API only."""

from __future__ import annotations

import json
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from akri import naming
from akri.kube.guarded import HTTP_NOT_FOUND
from akri.sim.cluster import Cluster
from akri.sim.kubelet.objects import ALLOCATIONS_ANNOTATION
from akri.sim.manifests import apply_documents
from tests.support import eventually


class User:
    """What a user does and sees, through the API."""

    def __init__(self, cluster: Cluster) -> None:
        self.api = cluster.api_client()
        self.core = client.CoreV1Api(self.api)
        self.custom = client.CustomObjectsApi(self.api)

    async def apply(self, body: dict[str, Any]) -> None:
        """`kubectl create -f` of a Configuration or a Pod."""
        await apply_documents(self.api, [body])

    run = apply

    async def phase(self, name: str) -> str | None:
        try:
            found = await self.core.read_namespaced_pod(name, "default")
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return None  # not created yet
            raise
        return str(found.status.phase)

    async def wait_running(self, name: str) -> dict[str, Any]:
        """The pod's allocations, once it runs."""
        await eventually(lambda: self._is(name, "Running"), f"pod {name} to run", deadline_s=60)
        found = await self.core.read_namespaced_pod(name, "default")
        allocations: dict[str, Any] = json.loads(found.metadata.annotations[ALLOCATIONS_ANNOTATION])
        return allocations

    async def run_until_admitted(self, body: dict[str, Any]) -> None:
        """Create the pod, and again whenever the kubelet refuses it, until it runs.

        Right after an Instance is replaced, a scheduler still seeing the old plugin's devices
        may bind a pod that the kubelet then refuses (UnexpectedAdmissionError) while the plugin
        re-registers, as on a real node; a user, or any controller, creates it again.
        """
        name = body["metadata"]["name"]

        async def running() -> bool:
            phase = await self.phase(name)
            if phase == "Failed":
                await self.core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
            elif phase is None:
                await self.run(body)
            return phase == "Running"

        await eventually(running, f"pod {name} to run", deadline_s=60)

    async def _is(self, name: str, phase: str) -> bool:
        return await self.phase(name) == phase

    async def reasons(self, name: str) -> list[str]:
        events = await self.core.list_namespaced_event(
            "default", field_selector=f"involvedObject.name={name}"
        )
        return [e.reason for e in events.items]

    async def wait_refused(self, name: str) -> None:
        """Until the pod is refused: Failed at admission, or Pending as unschedulable."""

        async def refused() -> bool:
            phase = await self.phase(name)
            return phase == "Failed" or (
                phase == "Pending" and "FailedScheduling" in await self.reasons(name)
            )

        await eventually(refused, f"pod {name} to be refused", deadline_s=60)

    async def instance(self, name: str) -> dict[str, Any] | None:
        """The Instance as stored, or None when there is none."""
        try:
            found: dict[str, Any] = await self.custom.get_namespaced_custom_object(
                naming.GROUP, naming.VERSION, "default", "instances", name
            )
        except ApiException as error:
            if error.status == HTTP_NOT_FOUND:
                return None
            raise
        return found

    async def usage(self, instance: str) -> dict[str, str]:
        """The held slots of the Instance; none when it is gone."""
        found = await self.instance(instance) or {"spec": {}}
        return {k: v for k, v in (found["spec"].get("deviceUsage") or {}).items() if v}

    async def allocatable(self, node: str) -> dict[str, str]:
        found = await self.core.read_node(node)
        allocatable = (found.status and found.status.allocatable) or {}
        return {k: v for k, v in allocatable.items() if k.startswith("akri.sh/")}


async def advertised(user: User, node: str, expected: dict[str, str]) -> None:
    async def matches() -> bool:
        return await user.allocatable(node) == expected

    await eventually(matches, f"{node} to advertise {expected}", deadline_s=60)
