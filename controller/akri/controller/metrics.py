"""The controller's Prometheus metrics (Akri's `akri_broker_pod_count` keeps its name)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from akri import naming
from akri.kube.reflector import EventType, Object

BROKER_PODS = Gauge(
    "akri_broker_pod_count",
    "Broker Pods that exist, by Configuration and node",
    ["configuration", "node"],
)
RECONCILES = Counter(
    "akri_controller_reconciles",
    "Reconciles run, by kind of object and result",
    ["kind", "result"],
)
RECONCILE_SECONDS = Histogram(
    "akri_controller_reconcile_duration_seconds",
    "Time spent in one reconcile, by kind of object",
    ["kind"],
)
LEADER = Gauge("akri_controller_leader", "1 while this replica is the leader, else 0")


class BrokerPodCount:
    """Keeps `akri_broker_pod_count` equal to the broker Pods in the cache."""

    def __init__(self) -> None:
        self._counted: dict[str, tuple[str, str]] = {}  # pod uid -> (configuration, node)

    def update(self, kind: EventType, pod: Object) -> None:
        metadata = pod["metadata"]
        labels = metadata.get("labels") or {}
        uid = metadata.get("uid", "")
        old = self._counted.pop(uid, None)
        if old is not None:
            BROKER_PODS.labels(*old).dec()
        node = labels.get(naming.LABEL_TARGET_NODE)
        if kind != "DELETED" and node is not None:
            new = (labels.get(naming.LABEL_CONFIGURATION, ""), node)
            self._counted[uid] = new
            BROKER_PODS.labels(*new).inc()

    def clear(self) -> None:
        """Stop reporting (this replica no longer follows the Pods)."""
        for labels in self._counted.values():
            BROKER_PODS.labels(*labels).dec()
        self._counted.clear()
