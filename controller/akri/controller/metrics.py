"""The controller's Prometheus metrics (Akri's `akri_broker_pod_count` keeps its name), one set
per controller, on its own registry (which its telemetry serves)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from akri import naming
from akri.kube.reflector import EventType, Object
from akri.telemetry import program_registry


class ControllerMetrics:
    def __init__(self) -> None:
        self.registry = program_registry()
        registry = self.registry
        self.broker_pods = Gauge(
            "akri_broker_pod_count",
            "Broker Pods that exist, by Configuration and node",
            ["configuration", "node"],
            registry=registry,
        )
        self.reconciles = Counter(
            "akri_controller_reconciles",
            "Reconciles run, by kind of object and result",
            ["kind", "result"],
            registry=registry,
        )
        self.reconcile_seconds = Histogram(
            "akri_controller_reconcile_duration_seconds",
            "Time spent in one reconcile, by kind of object",
            ["kind"],
            registry=registry,
        )
        self.leader = Gauge(
            "akri_controller_leader",
            "1 while this replica is the leader, else 0",
            registry=registry,
        )


class BrokerPodCount:
    """Keeps `akri_broker_pod_count` equal to the broker Pods in the cache."""

    def __init__(self, gauge: Gauge) -> None:
        self._gauge = gauge
        self._counted: dict[str, tuple[str, str]] = {}  # pod uid -> (configuration, node)

    def update(self, kind: EventType, pod: Object) -> None:
        metadata = pod["metadata"]
        labels = metadata.get("labels") or {}
        uid = metadata.get("uid", "")
        old = self._counted.pop(uid, None)
        if old is not None:
            self._gauge.labels(*old).dec()
        node = labels.get(naming.LABEL_TARGET_NODE)
        if kind != "DELETED" and node is not None:
            new = (labels.get(naming.LABEL_CONFIGURATION, ""), node)
            self._counted[uid] = new
            self._gauge.labels(*new).inc()

    def clear(self) -> None:
        """Stop reporting (this replica no longer follows the Pods)."""
        for labels in self._counted.values():
            self._gauge.labels(*labels).dec()
        self._counted.clear()
