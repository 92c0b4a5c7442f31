"""Where the API server's calls to a Service go: a ready pod's IP and its targetPort."""

from __future__ import annotations

import inspect
import random
from collections.abc import Sequence
from typing import Any

import pytest

from akri.sim.apiserver.endpoints import endpoint

SERVICE = {
    "metadata": {"name": "akri-webhook", "namespace": "akri"},
    "spec": {
        "selector": {"app": "controller"},
        "ports": [{"port": 443, "targetPort": "webhook"}, {"port": 80, "targetPort": 8080}],
    },
}


def pod(name: str, ip: str, *, ready: bool = True, app: str = "controller") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"ports": [{"name": "webhook", "containerPort": 8443}]}]},
        "status": {
            "podIP": ip,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }


def test_a_named_target_port_is_the_ready_pods_container_port() -> None:
    pods = [
        pod("b", "10.244.1.3"),
        pod("a", "10.244.0.2", ready=False),
        pod("c", "10.1.1.1", app="x"),
    ]
    assert endpoint(SERVICE, pods, 443) == ("10.244.1.3", 8443)
    assert endpoint(SERVICE, pods, 80) == ("10.244.1.3", 8080)


def test_each_call_picks_one_of_the_ready_pods_as_kube_proxy_spreads_connections() -> None:
    pods = [pod("b", "10.244.1.3"), pod("a", "10.244.0.2"), pod("c", "10.244.1.4", ready=False)]
    offered: list[list[tuple[str, int]]] = []

    def last(ready: Sequence[tuple[str, int]]) -> tuple[str, int]:
        offered.append(list(ready))
        return ready[-1]

    assert endpoint(SERVICE, pods, 443, last) == ("10.244.1.3", 8443)
    assert offered == [[("10.244.0.2", 8443), ("10.244.1.3", 8443)]]
    rng = random.Random(7)
    reached = {endpoint(SERVICE, pods, 443, rng.choice) for _ in range(64)}
    assert reached == {("10.244.0.2", 8443), ("10.244.1.3", 8443)}, "not always the first"
    assert inspect.signature(endpoint).parameters["pick"].default is random.choice


@pytest.mark.parametrize(
    ("pods", "port", "message"),
    [
        (
            [pod("a", "10.244.0.2", ready=False)],
            443,
            'no endpoints available for service "akri-webhook"',
        ),
        ([pod("a", "")], 443, 'no endpoints available for service "akri-webhook"'),
        ([pod("a", "10.244.0.2")], 8443, 'service "akri-webhook" has no port 8443'),
    ],
)
def test_no_ready_pod_or_no_such_port_is_refused(
    pods: list[dict[str, Any]], port: int, message: str
) -> None:
    with pytest.raises(LookupError, match=message):
        endpoint(SERVICE, pods, port)
