"""The agent's Prometheus metrics (Akri's names where Akri has them), one set per agent.

Each agent counts on its own registry, which its telemetry serves: agents sharing a process
(the simulator's nodes, tests) never add to each other's counters.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from akri.telemetry import program_registry


class AgentMetrics:
    def __init__(self) -> None:
        self.registry = program_registry()
        registry = self.registry
        self.instance_count = Gauge(
            "akri_instance_count",
            "Instances this agent serves device plugins for",
            ["configuration", "is_shared"],
            registry=registry,
        )
        self.discovery_response_result = Counter(
            "akri_discovery_response_result",
            "Discovery responses received, by handler and result",
            ["discovery_handler_name", "result"],
            registry=registry,
        )
        self.discovery_response_time = Histogram(
            "akri_discovery_response_time",
            "Seconds from a Configuration being seen to its first discovery response",
            ["configuration"],
            buckets=(0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 60),
            registry=registry,
        )
        self.allocations = Counter(
            "akri_allocations",
            "Allocate calls answered, by resource level (instance, configuration) and result",
            ["level", "result"],
            registry=registry,
        )
        self.allocation_latency = Histogram(
            "akri_allocation_latency_seconds",
            "Time to answer an Allocate call, including the guarded Instance write",
            ["level"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=registry,
        )
        self.slot_conflict_retries = Counter(
            "akri_slot_conflict_retries",
            "Instance writes that met a newer resourceVersion (409) and were decided again",
            registry=registry,
        )
        self.allocate_batches = Counter(
            "akri_allocate_batches",
            "Batches of this node's Allocates decided together (each written as one guarded "
            "write per Instance)",
            registry=registry,
        )
        self.slots_reclaimed = Counter(
            "akri_slots_reclaimed",
            "Slots freed because no container on this node used them for the grace period",
            registry=registry,
        )
        self.list_and_watch_sends = Counter(
            "akri_list_and_watch_sends",
            "Device lists sent to the kubelet, by resource level",
            ["level"],
            registry=registry,
        )
