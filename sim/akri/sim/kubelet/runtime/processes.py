"""The process runtime of one simulated node: which pods it runs, and with what."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from akri.sim.kubelet.runtime.pod import Fetch, NodeHost, PodRuntime, RuntimeSettings
from akri.sim.kubelet.runtime.spec import runs_as_process


class Processes:
    """Pods whose containers are of the project's image run as processes on this node."""

    def __init__(self, settings: RuntimeSettings, node: NodeHost, fetch: Fetch) -> None:
        self.settings = settings
        self.node = node
        self._fetch = fetch

    def wants(self, pod: Mapping[str, Any]) -> bool:
        """Pods all of whose containers are of the image; with a pod network, every pod: those
        of other images get their network, their containers run without a process."""
        containers = (pod.get("spec") or {}).get("containers") or []
        return bool(containers) and (
            self.node.network is not None
            or all(
                runs_as_process(str(c.get("image", "")), self.settings.sim_image)
                for c in containers
            )
        )

    def runtime(
        self,
        pod: Mapping[str, Any],
        changed: Callable[[], None],
        device_env: Mapping[str, Mapping[str, str]] | None = None,
    ) -> PodRuntime:
        """`device_env`: container -> what its devices add to its env (Allocate, CDI)."""
        return PodRuntime(pod, self.node, self.settings, self._fetch, changed, device_env or {})
