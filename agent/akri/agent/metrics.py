"""The agent's Prometheus metrics, defined once (Akri's names where Akri has them)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

INSTANCE_COUNT = Gauge(
    "akri_instance_count",
    "Instances this agent serves device plugins for",
    ["configuration", "is_shared"],
)
DISCOVERY_RESPONSE_RESULT = Counter(
    "akri_discovery_response_result",
    "Discovery responses received, by handler and result",
    ["discovery_handler_name", "result"],
)
DISCOVERY_RESPONSE_TIME = Histogram(
    "akri_discovery_response_time",
    "Seconds from a Configuration being seen to its first discovery response",
    ["configuration"],
    buckets=(0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 60),
)
ALLOCATIONS = Counter(
    "akri_allocations",
    "Allocate calls answered, by resource level (instance, configuration) and result",
    ["level", "result"],
)
ALLOCATION_LATENCY = Histogram(
    "akri_allocation_latency_seconds",
    "Time to answer an Allocate call, including the guarded Instance write",
    ["level"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
)
SLOT_CONFLICT_RETRIES = Counter(
    "akri_slot_conflict_retries",
    "Instance writes that met a newer resourceVersion (409) and were decided again",
)
ALLOCATE_BATCHES = Counter(
    "akri_allocate_batches",
    "Batches of this node's Allocates decided together (each written as one guarded write "
    "per Instance)",
)
SLOTS_RECLAIMED = Counter(
    "akri_slots_reclaimed",
    "Slots freed because no container on this node used them for the grace period",
)
LIST_AND_WATCH_SENDS = Counter(
    "akri_list_and_watch_sends",
    "Device lists sent to the kubelet, by resource level",
    ["level"],
)
