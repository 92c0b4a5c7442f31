"""A broker spec that cannot work is reported on its Configuration; the rest carries on."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.controller.conftest import (
    NAMESPACE,
    configuration_body,
    create_configuration,
    create_instance,
    events,
    pod_spec,
    pods,
    ready_node,
    running,
)
from tests.support import eventually

STRICT = "strict"


async def condition(api: client.ApiClient, name: str, namespace: str) -> dict[str, Any] | None:
    found = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        naming.GROUP, naming.VERSION, namespace, "configurations", name
    )
    conditions = (found.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c["type"] == "InvalidBrokerSpec"), None)


async def test_bad_specs_are_reported_and_good_ones_still_deployed(
    apiserver: ApiServer, api: client.ApiClient
) -> None:
    await ready_node(api, "node-0")
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=STRICT)))
    # The emulator does not validate Pod specs; a rule makes it refuse every Pod in one
    # namespace, as a real API server refuses an invalid one.
    refusal = apiserver.faults.add(
        FaultRule(verb="create", resource="pods", namespace=STRICT, status=400,
                  message='Pod "x" is invalid: spec.containers[0].image: Required value')
    )  # fmt: skip
    shapeless = await create_configuration(
        api, configuration_body("shapeless", broker_pod_spec={"containers": "broker"})
    )
    refused = await create_configuration(
        api, configuration_body("refused", namespace=STRICT, broker_pod_spec=pod_spec())
    )
    good = await create_configuration(api, configuration_body("good", broker_pod_spec=pod_spec()))
    for configuration in (shapeless, refused, good):
        await create_instance(api, configuration, "dev0", ["node-0"])

    async with running(api):
        good_broker = naming.broker_pod_name(naming.instance_name("good", "dev0"), "node-0", True)
        await eventually(lambda: _has(api, good_broker), "the good Configuration's broker")

        shapeless_condition = await eventually(
            lambda: condition(api, "shapeless", NAMESPACE), "shapeless to be marked"
        )
        assert shapeless_condition["status"] == "True"
        assert "non-empty list of containers" in shapeless_condition["message"]

        refused_condition = await eventually(
            lambda: condition(api, "refused", STRICT), "refused to be marked"
        )
        assert refused_condition["status"] == "True"
        assert "Required value" in refused_condition["message"]
        reasons = {e.reason for e in await events(api, "refused", STRICT)}
        assert "InvalidBrokerSpec" in reasons
        assert refusal.hits >= 1

        apiserver.faults.remove(refusal.id)  # the spec is fixed
        refused_broker = naming.broker_pod_name(
            naming.instance_name("refused", "dev0"), "node-0", True
        )
        await eventually(lambda: _has(api, refused_broker, STRICT), "the fixed broker")
        await eventually(
            lambda: _status_is(api, "refused", STRICT, "False"), "the condition to clear"
        )
        assert await condition(api, "good", NAMESPACE) is None


async def _has(api: client.ApiClient, name: str, namespace: str = NAMESPACE) -> bool:
    return name in await pods(api, namespace)


async def _status_is(api: client.ApiClient, name: str, namespace: str, status: str) -> bool:
    found = await condition(api, name, namespace)
    return found is not None and found["status"] == status
