"""Broker Pods and Services on a simulated cluster: created, pinned, admitted, cleaned up."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from kubernetes_asyncio import client

from akri import naming
from akri.sim.cluster import Cluster
from tests.controller.conftest import (
    NAMESPACE,
    Plugins,
    configuration_body,
    create_configuration,
    create_instance,
    patch,
    pod_spec,
    pods,
    running,
    services,
)
from tests.support import eventually

NODES = ["node-0", "node-1"]


def phases(found: dict[str, Any]) -> dict[str, str | None]:
    return {name: pod.status.phase if pod.status else None for name, pod in found.items()}


async def test_shared_instances_get_a_running_broker_per_node_and_services(
    cluster: Cluster, plugins: Plugins
) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec(init=True), services=True)
    )
    instances = [await create_instance(api, configuration, f"dev{i}", NODES) for i in range(2)]
    for instance in instances:
        await plugins.offer(instance, NODES)
    expected = {
        naming.broker_pod_name(i.metadata.name or "", node, True): (i, node)
        for i in instances
        for node in NODES
    }

    async with running(api) as controller:

        async def all_running() -> bool:
            found = phases(await pods(api))
            return found.keys() == expected.keys() and set(found.values()) == {"Running"}

        await eventually(all_running, "4 broker Pods to run")
        wanted_services = {naming.instance_service_name(i.metadata.name or "") for i in instances}
        wanted_services.add(naming.configuration_service_name("cam"))
        await eventually(
            lambda: _contains(services(api), wanted_services), "instance and configuration Services"
        )

        for name, pod in (await pods(api)).items():
            instance, node = expected[name]
            instance_name = instance.metadata.name or ""
            assert pod.spec.node_name == node
            assert pod.metadata.labels == {
                naming.LABEL_CONFIGURATION: "cam",
                naming.LABEL_INSTANCE: instance_name,
                naming.LABEL_TARGET_NODE: node,
                naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
            }
            owner = pod.metadata.owner_references[0]
            assert (owner.kind, owner.name, owner.uid, owner.controller) == (
                "Instance",
                instance_name,
                instance.metadata.uid,
                True,
            )
            terms = (
                pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
            )
            (term,) = terms.node_selector_terms
            (field,) = term.match_fields
            assert (field.key, field.operator, field.values) == ("metadata.name", "In", [node])
            resource = naming.resource_name(instance_name)
            for container in [*pod.spec.containers, *pod.spec.init_containers]:
                assert container.resources.limits == {resource: "1"}
                assert container.resources.requests == {resource: "1"}

        for node in NODES:
            assert (
                controller.metrics.registry.get_sample_value(
                    "akri_broker_pod_count", {"configuration": "cam", "node": node}
                )
                == 2
            )
        await eventually(lambda: _instance_count_is(api, 2), "instanceCount in the status")

        core = client.CoreV1Api(api)
        service = await core.read_namespaced_service(
            naming.instance_service_name(instances[0].metadata.name or ""), NAMESPACE
        )
        assert service.spec.selector == {
            naming.LABEL_INSTANCE: instances[0].metadata.name,
            naming.LABEL_CONTROLLER: naming.CONTROLLER_LABEL_VALUE,
        }
        assert service.metadata.owner_references[0].uid == instances[0].metadata.uid
        config_service = await core.read_namespaced_service("cam-svc", NAMESPACE)
        assert config_service.spec.selector[naming.LABEL_CONFIGURATION] == "cam"
        assert config_service.metadata.owner_references[0].uid == configuration.metadata.uid

        await client.CustomObjectsApi(api).delete_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "configurations", "cam"
        )

        async def all_gone() -> bool:
            return not await pods(api) and not (await services(api)) & wanted_services

        await eventually(all_gone, "brokers and Services to be collected")


async def _contains(found: Awaitable[set[str]], wanted: set[str]) -> bool:
    return wanted <= await found


async def _patch_instance(api: client.ApiClient, name: str, spec: dict[str, Any]) -> None:
    await patch(api, "instances", name, {"spec": spec})


async def _uids(api: client.ApiClient) -> dict[str, str]:
    return {name: pod.metadata.uid for name, pod in (await pods(api)).items()}


async def test_broker_follows_the_instance_nodes(cluster: Cluster, plugins: Plugins) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec())
    )
    instance = await create_instance(api, configuration, "dev0", NODES)
    await plugins.offer(instance, NODES)
    name = instance.metadata.name or ""
    on = {node: naming.broker_pod_name(name, node, True) for node in NODES}

    async with running(api):
        await eventually(
            lambda: _names_are(api, set(on.values())), "a broker on each node of the Instance"
        )
        await _patch_instance(api, name, {"nodes": ["node-0"]})
        await eventually(lambda: _names_are(api, {on["node-0"]}), "node-1's broker to go")
        await _patch_instance(api, name, {"nodes": NODES})
        await eventually(lambda: _names_are(api, set(on.values())), "node-1's broker to return")


async def test_changes_of_broker_spec_or_properties_roll_the_brokers(
    cluster: Cluster, plugins: Plugins
) -> None:
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec())
    )
    instance = await create_instance(api, configuration, "dev0", NODES)
    await plugins.offer(instance, NODES)
    name = instance.metadata.name or ""

    async with running(api):
        first = await eventually(lambda: _two_uids(api), "two brokers")
        await _patch_instance(api, name, {"brokerProperties": {"RESOLUTION": "800"}})
        second = await eventually(lambda: _renewed(api, first), "brokers rolled for new properties")
        spec = pod_spec()
        spec["containers"][0]["image"] = "nginx:next"
        await patch(api, "configurations", "cam", {"spec": {"brokerSpec": {"brokerPodSpec": spec}}})
        await eventually(lambda: _renewed(api, second), "brokers rolled for the new spec")
        images = {pod.spec.containers[0].image for pod in (await pods(api)).values()}
        assert images == {"nginx:next"}


async def test_job_brokers_get_one_job_per_configuration_generation(
    cluster: Cluster,
) -> None:
    api = cluster.api_client()
    job_spec = {"template": {"spec": {**pod_spec(), "restartPolicy": "Never"}}, "backoffLimit": 2}
    configuration = await create_configuration(
        api, configuration_body("job", broker_job_spec=job_spec)
    )
    instance = await create_instance(api, configuration, "dev0", NODES)
    name = instance.metadata.name or ""
    batch = client.BatchV1Api(api)

    async def jobs() -> dict[str, Any]:
        return {j.metadata.name: j for j in (await batch.list_namespaced_job(NAMESPACE)).items}

    async def only(job_name: str) -> dict[str, Any] | None:
        found = await jobs()
        return found if set(found) == {job_name} else None

    async with running(api):
        generation = configuration.metadata.generation or 0
        found = await eventually(lambda: only(naming.broker_job_name(name, generation)), "a Job")
        job = next(iter(found.values()))
        assert job.metadata.owner_references[0].uid == instance.metadata.uid
        template = job.spec.template
        assert template.metadata.labels[naming.LABEL_INSTANCE] == name
        resource = naming.resource_name(name)
        assert template.spec.containers[0].resources.limits == {resource: "1"}
        # no broker Pod of the controller's own: any there is the Job's (the Job controller's)
        owners = {p.metadata.owner_references[0].kind for p in (await pods(api)).values()}
        assert owners <= {"Job"}

        job_spec["backoffLimit"] = 3
        updated = await patch(
            api, "configurations", "job", {"spec": {"brokerSpec": {"brokerJobSpec": job_spec}}}
        )
        new_name = naming.broker_job_name(name, updated["metadata"]["generation"])
        await eventually(lambda: only(new_name), "the Job of the new generation alone")


async def _names_are(api: client.ApiClient, names: set[str]) -> bool:
    return set(await pods(api)) == names


async def _two_uids(api: client.ApiClient) -> dict[str, str] | None:
    uids = await _uids(api)
    return uids if len(uids) == 2 else None


async def _renewed(api: client.ApiClient, before: dict[str, str]) -> dict[str, str] | None:
    """Both brokers exist again, each a new Pod (so both were replaced)."""
    uids = await _uids(api)
    fresh = uids.keys() == before.keys() and not set(uids.values()) & set(before.values())
    return uids if fresh else None


async def _instance_count_is(api: client.ApiClient, count: int) -> bool:
    stored = await client.CustomObjectsApi(api).get_namespaced_custom_object(
        naming.GROUP, naming.VERSION, NAMESPACE, "configurations", "cam"
    )
    return bool((stored.get("status") or {}).get("instanceCount") == count)


async def test_the_brokers_of_an_instance_being_deleted_go_first(
    cluster: Cluster, plugins: Plugins
) -> None:
    """Its slots finalizer waits for them (docs/design.md §5.5); the collector would not."""
    api = cluster.api_client()
    configuration = await create_configuration(
        api, configuration_body("cam", broker_pod_spec=pod_spec())
    )
    instance = await create_instance(api, configuration, "dev0", NODES)
    name = instance.metadata.name or ""
    await plugins.offer(instance, NODES)
    await patch(api, "instances", name, {"metadata": {"finalizers": [naming.SLOTS_FINALIZER]}})

    async with running(api):
        await eventually(lambda: _count(pods(api), 2), "two brokers")
        await client.CustomObjectsApi(api).delete_namespaced_custom_object(
            naming.GROUP, naming.VERSION, NAMESPACE, "instances", name
        )
        await eventually(lambda: _count(pods(api), 0), "the brokers to be deleted")
        await patch(api, "instances", name, {"metadata": {"finalizers": None}})


async def _count(found: Awaitable[dict[str, Any]], count: int) -> bool:
    return len(await found) == count
