"""Whole agents on two nodes against the API emulator: Configurations in, Instances out."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from akri.api import DiscoveryProperty, Instance, KeySelector, PropertySource, crd_definitions
from akri.discovery.model import Device, DeviceSpec, Mount
from akri.discovery.server import HandlerServer
from akri.discovery_handlers.debug_echo import DebugEcho
from akri.naming import instance_name
from akri.sim.apiserver import ApiServer
from akri.sim.apiserver.faults import FaultRule
from tests.agent.running_agents import NAMESPACE, Api, Node, configuration, running_agent
from tests.discovery.scripted import Scripted
from tests.support import eventually

A, B = "node-a", "node-b"
FOO0, FOO1 = "cfg-8120fe", "cfg-a19705"
BOTH = [A, B]


@pytest.fixture
def k(api: client.ApiClient) -> Api:
    return Api(api)


def count_writes(apiserver: ApiServer) -> list[FaultRule]:
    """Rules that match every Instance write and fault nothing: their hits count the writes."""
    return [
        apiserver.faults.add(verb=verb, resource="instances")
        for verb in ("create", "update", "patch", "delete")
    ]


def discovered(node: Node) -> frozenset[str]:
    """The Instances of the devices the node's discovery reports now."""
    return node.agent.devices.instances()


@pytest.mark.parametrize("namespace", [None, NAMESPACE])
async def test_shared_devices_are_one_instance_listing_both_nodes(
    api: client.ApiClient, socket_dir: Path, k: Api, namespace: str | None
) -> None:
    async with (
        running_agent(api, socket_dir, A, akri_namespace=namespace),
        running_agent(api, socket_dir, B, akri_namespace=namespace),
    ):
        await k.apply(configuration(capacity=2, broker_properties={"MODE": "demo"}))
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        await eventually(lambda: k.nodes_of(FOO1, BOTH), "foo1 on both nodes")
        instances = await k.instances()
    assert sorted(instances) == [FOO0, FOO1]
    foo0 = instances[FOO0].spec
    assert foo0.shared
    assert foo0.capacity == 2
    assert foo0.broker_properties == {"DEBUG_ECHO_DESCRIPTION": "foo0", "MODE": "demo"}
    assert foo0.device_usage == {f"{FOO0}-0": "", f"{FOO0}-1": ""}
    assert instances[FOO0].metadata.owner_references[0].name == "cfg"


async def test_local_devices_are_one_instance_per_node(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with (
        running_agent(api, socket_dir, A, shared=False),
        running_agent(api, socket_dir, B, shared=False),
    ):
        await k.apply(configuration())
        expected = {
            instance_name("cfg", device, node): [node]
            for device in ("foo0", "foo1")
            for node in BOTH
        }

        async def listed() -> bool:
            found = await k.instances()
            return {name: i.spec.nodes for name, i in found.items()} == expected

        await eventually(listed, "one Instance per device and node")


async def test_a_local_device_gone_is_left_at_once(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    gone, kept = instance_name("cfg", "foo0", A), instance_name("cfg", "foo0", B)
    async with (
        running_agent(api, socket_dir, A, shared=False) as a,
        running_agent(api, socket_dir, B, shared=False),
    ):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(kept, [B]), "node-b's Instance")
        await eventually(lambda: k.nodes_of(gone, [A]), "node-a's Instance")
        a.echo.set_offline(["foo0"])
        await eventually(lambda: _absent(k, gone), "node-a's Instance deleted")
        assert await k.nodes_of(kept, [B])
        assert await k.nodes_of(instance_name("cfg", "foo1", A), [A])


async def _absent(k: Api, name: str) -> bool:
    return await k.instance(name) is None


async def test_a_shared_device_gone_is_left_after_the_grace(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with (
        running_agent(api, socket_dir, A, offline_grace=0.2) as a,
        running_agent(api, socket_dir, B, offline_grace=0.2) as b,
    ):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        a.echo.set_offline(["foo0"])
        await eventually(lambda: k.nodes_of(FOO0, [B]), "node-a to leave foo0")
        b.echo.set_offline(["foo0"])
        await eventually(lambda: _absent(k, FOO0), "foo0 deleted once no node sees it")
        assert await k.nodes_of(FOO1, BOTH)
        a.echo.set_offline()
        await eventually(lambda: k.nodes_of(FOO0, [A]), "foo0 back on node-a")


async def test_two_nodes_leaving_at_once_delete_the_instance_once(
    api: client.ApiClient, socket_dir: Path, k: Api, caplog: pytest.LogCaptureFixture
) -> None:
    async with (
        running_agent(api, socket_dir, A, offline_grace=0) as a,
        running_agent(api, socket_dir, B, offline_grace=0) as b,
    ):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        await eventually(lambda: k.nodes_of(FOO1, BOTH), "foo1 on both nodes")
        with caplog.at_level(logging.INFO, logger="akri.agent.publisher"):
            a.echo.set_offline(everything=True)
            b.echo.set_offline(everything=True)

            async def none_left() -> bool:
                return await k.instances() == {}

            await eventually(none_left, "both Instances deleted")
    deleted = [r.getMessage() for r in caplog.records if "deleted Instance" in r.getMessage()]
    assert sorted(m.split()[2].rstrip(":") for m in deleted) == [FOO0, FOO1]
    assert [r.getMessage() for r in caplog.records if _complaint(r)] == []


async def test_a_shared_device_back_within_the_grace_costs_no_spec_write(
    api: client.ApiClient, apiserver: ApiServer, socket_dir: Path, k: Api
) -> None:
    async with (
        running_agent(api, socket_dir, A, offline_grace=60) as a,
        running_agent(api, socket_dir, B, offline_grace=60),
    ):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        await eventually(lambda: k.nodes_of(FOO1, BOTH), "foo1 on both nodes")
        before = await k.instance(FOO0)
        writes = count_writes(apiserver)
        reports = [
            apiserver.faults.add(verb=verb, resource="instances/status")
            for verb in ("update", "patch")
        ]
        a.echo.set_offline(["foo0"])
        await eventually(lambda: discovered(a) == {FOO1}, "node-a to publish without foo0")
        a.echo.set_offline()
        await eventually(lambda: discovered(a) == {FOO0, FOO1}, "node-a to publish foo0 again")
        # Only the DeviceOffline report and its withdrawal (status) were written, no spec.
        assert sum(rule.hits for rule in writes) == sum(rule.hits for rule in reports)
        after = await k.instance(FOO0)
    assert before is not None
    assert after is not None
    assert after.metadata.generation == before.metadata.generation
    assert after.spec == before.spec


async def test_configuration_changes_reach_the_instances(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with running_agent(api, socket_dir, A), running_agent(api, socket_dir, B):
        await k.apply(configuration(capacity=2, broker_properties={"MODE": "a"}))
        await eventually(lambda: k.nodes_of(FOO1, BOTH), "foo1 on both nodes")
        for capacity, mode in ((3, "b"), (1, "c")):
            await k.apply(configuration(capacity=capacity, broker_properties={"MODE": mode}))

            async def followed(capacity: int = capacity, mode: str = mode) -> bool:
                found = await k.instances()
                return sorted(found) == [FOO0, FOO1] and all(
                    _follows(i, capacity, mode) and sorted(i.spec.nodes) == BOTH
                    for i in found.values()
                )

            await eventually(followed, f"capacity {capacity} and MODE={mode} on the Instances")


def _follows(instance: Instance, capacity: int, mode: str) -> bool:
    name = instance.metadata.name
    return (
        instance.spec.capacity == capacity
        and instance.spec.broker_properties.get("MODE") == mode
        and sorted(instance.spec.device_usage) == [f"{name}-{i}" for i in range(capacity)]
    )


async def test_new_details_restart_discovery(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with running_agent(api, socket_dir, A, offline_grace=0):
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO1, [A]), "foo1")
        await k.apply(configuration(details="descriptions: [foo1, bar]"))
        bar = instance_name("cfg", "bar")

        async def rediscovered() -> bool:
            return sorted(await k.instances()) == sorted([FOO1, bar])

        await eventually(rediscovered, "foo0 left and bar found")


async def test_a_deleted_configuration_stops_discovery_quietly(
    api: client.ApiClient, socket_dir: Path, k: Api, caplog: pytest.LogCaptureFixture
) -> None:
    async with running_agent(api, socket_dir, A) as a, running_agent(api, socket_dir, B) as b:
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="akri"):
            await k.delete_configuration("cfg")

            async def none_left() -> bool:
                return await k.instances() == {}

            await eventually(none_left, "the Instances to be gone")
            await eventually(lambda: not discovered(a) and not discovered(b), "discovery to stop")
    assert [r.getMessage() for r in caplog.records if _complaint(r)] == []


def _complaint(record: logging.LogRecord) -> bool:
    """An error anywhere in the agent, or a warning about Configurations or Instances."""
    mine = ("akri.agent.runner", "akri.agent.publisher", "akri.agent.configurations")
    return record.name.startswith("akri") and (
        record.levelno >= logging.ERROR
        or (record.levelno >= logging.WARNING and record.name.startswith(mine))
    )


async def test_a_configuration_created_again_gets_new_instances(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    """The old Instances belong to the collector; the new Configuration gets its own."""
    async with running_agent(api, socket_dir, A), running_agent(api, socket_dir, B):
        first = await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
        await k.delete_configuration("cfg")
        second = await k.apply(configuration())
        assert second["metadata"]["uid"] != first["metadata"]["uid"]

        async def owned_by_second() -> bool:
            found = await k.instances()
            return sorted(found) == [FOO0, FOO1] and all(
                i.metadata.owner_references[0].uid == second["metadata"]["uid"]
                and sorted(i.spec.nodes) == BOTH
                for i in found.values()
            )

        await eventually(owned_by_second, "Instances of the new Configuration on both nodes")


async def test_an_unknown_handler_is_reported_and_other_configurations_still_work(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with running_agent(api, socket_dir, A):
        await k.apply(configuration("lost", handler="udev"))
        await k.apply(configuration("bad", details="colours: [red]"))
        await k.apply(configuration())
        await eventually(lambda: k.nodes_of(FOO0, [A]), "the valid Configuration's Instances")
        unavailable = await eventually(
            lambda: _condition_true(k, "lost", "HandlerUnavailable"), "HandlerUnavailable"
        )
        invalid = await eventually(
            lambda: _condition_true(k, "bad", "InvalidDetails"), "InvalidDetails"
        )
        ready = await eventually(lambda: _condition_true(k, "cfg", "Ready"), "Ready")
        events = await eventually(lambda: k.events("HandlerUnavailable"), "an Event")
    assert "no discovery handler named 'udev'" in unavailable["message"]
    assert "registered here: debugEcho" in unavailable["message"]
    assert unavailable["message"].startswith(f"node {A}: ")
    assert "colours" in invalid["message"]
    assert ready["reason"] == "Discovering"
    assert [e.involved_object.name for e in events] == ["lost"]
    assert sorted(await k.instances()) == [FOO0, FOO1]


async def _condition_true(k: Api, config: str, type: str) -> dict[str, str] | None:
    found = await k.condition(config, type)
    return found if found is not None and found["status"] == "True" else None


async def test_a_name_too_long_for_resources_is_refused(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    """The agents' own check, for a cluster whose CRD predates the rule that refuses such a
    name at admission (tests/conformance/test_conformance_configuration_name.py)."""
    long_name = "c" * 60
    extensions = client.ApiextensionsV1Api(api)
    crd = await extensions.read_custom_resource_definition("configurations.akri.sh")
    crd.spec.versions[0].schema.open_apiv3_schema.x_kubernetes_validations = []
    await extensions.replace_custom_resource_definition("configurations.akri.sh", crd)
    async with running_agent(api, socket_dir, A):
        await k.apply(configuration(long_name))
        await k.apply(configuration())
        found = await eventually(
            lambda: _condition_true(k, long_name, "InvalidName"), "InvalidName"
        )
        await eventually(lambda: k.nodes_of(FOO0, [A]), "the valid Configuration's Instances")
    assert "is 67 characters, the limit is 63" in found["message"]
    assert all(i.spec.configuration_name == "cfg" for i in (await k.instances()).values())


async def test_unresolvable_properties_are_reported(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    secret = PropertySource(secret_key_ref=KeySelector(name="missing", key="password"))
    prop = DiscoveryProperty(name="PASSWORD", value_from=secret)
    async with running_agent(api, socket_dir, A):
        await k.apply(configuration(properties=[prop]))
        found = await eventually(
            lambda: _condition_true(k, "cfg", "InvalidProperties"), "InvalidProperties"
        )
        assert await k.instances() == {}
    assert "Secret default/missing not found" in found["message"]


async def test_an_external_handler_registering_with_the_agent_is_used(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    async with running_agent(api, socket_dir, A, handlers=[]) as a:
        await k.apply(configuration())
        await eventually(lambda: _condition_true(k, "cfg", "HandlerUnavailable"), "no handler")
        external = DebugEcho(shared=False, availability_file=None)
        directory = a.agent.settings.discovery_handlers_directory
        async with HandlerServer(external, directory):
            local = instance_name("cfg", "foo0", A)
            await eventually(lambda: k.nodes_of(local, [A]), "an Instance from the external one")
            await eventually(lambda: _condition_true(k, "cfg", "Ready"), "Ready")
            condition = await k.condition("cfg", "HandlerUnavailable")
    assert condition is not None
    assert condition["status"] == "False"


async def test_a_restarted_agent_changes_nothing(
    api: client.ApiClient, apiserver: ApiServer, socket_dir: Path, k: Api
) -> None:
    async with running_agent(api, socket_dir, B):
        async with running_agent(api, socket_dir, A):
            await k.apply(configuration())
            await eventually(lambda: k.nodes_of(FOO0, BOTH), "foo0 on both nodes")
            await eventually(lambda: k.nodes_of(FOO1, BOTH), "foo1 on both nodes")
            before = await k.instances()
        writes = count_writes(apiserver)
        async with running_agent(api, socket_dir, A) as again:
            await eventually(lambda: discovered(again) == {FOO0, FOO1}, "the new agent to publish")
            after = await k.instances()
    assert sum(rule.hits for rule in writes) == 0
    assert {n: i.metadata.resource_version for n, i in after.items()} == {
        n: i.metadata.resource_version for n, i in before.items()
    }


async def test_mounts_and_device_nodes_are_offered_to_the_plugins(
    api: client.ApiClient, socket_dir: Path, k: Api
) -> None:
    handler = Scripted(shared=False)
    allowed = (Path("/host"),)  # the operator's allowlist; /dev for device nodes in any case
    async with running_agent(
        api, socket_dir, A, handlers=[handler], allowed_mount_paths=allowed
    ) as a:
        await k.apply(configuration(handler=handler.name))
        device = Device(
            "cam",
            {"URL": "rtsp://cam"},
            mounts=(Mount("/data", "/host/data", read_only=True),),
            device_specs=(DeviceSpec("/dev/video0", "/dev/video3", "rw"),),
        )
        handler.feed.put_nowait([device])
        name = instance_name("cfg", "cam", A)
        await eventually(lambda: k.nodes_of(name, [A]), "the camera's Instance")
        extras = a.agent.devices.extras(name)
    assert extras is not None
    mounts, specs = extras
    assert [(m.container_path, m.host_path, m.read_only) for m in mounts] == [
        ("/data", "/host/data", True)
    ]
    assert [(s.container_path, s.host_path, s.permissions) for s in specs] == [
        ("/dev/video0", "/dev/video3", "rw")
    ]


def _without_validation_rules(node: Any) -> Any:
    """A CRD as an API server that evaluates no CEL rules (or an older CRD) would hold it."""
    if isinstance(node, dict):
        return {
            k: _without_validation_rules(v)
            for k, v in node.items()
            if k != "x-kubernetes-validations"
        }
    if isinstance(node, list):
        return [_without_validation_rules(v) for v in node]
    return node


async def test_a_malformed_configuration_is_reported_and_skipped(
    api: client.ApiClient, apiserver: ApiServer, socket_dir: Path, k: Api
) -> None:
    """What the API server lets through and the model refuses (here: no CEL rules to refuse
    both broker kinds) is reported and skipped, never run."""
    await apiserver.apply_definitions(_without_validation_rules(crd_definitions()))
    both_kinds = {"brokerPodSpec": {"containers": []}, "brokerJobSpec": {"template": {}}}
    broken = configuration("broken").to_wire()
    broken["spec"]["brokerSpec"] = both_kinds
    async with running_agent(api, socket_dir, A, offline_grace=0) as a:
        await k.custom.create_namespaced_custom_object(
            "akri.sh", "v0", NAMESPACE, "configurations", broken
        )
        await k.apply(configuration(capacity=2))
        await eventually(lambda: k.nodes_of(FOO0, [A]), "the valid Configuration's Instances")
        (event,) = await eventually(lambda: k.events("InvalidConfiguration"), "an Event")
        assert event.involved_object.name == "broken"
        assert "exactly one of brokerPodSpec or brokerJobSpec" in event.message
        conditions = await eventually(lambda: _conditions(k, "broken"), "READY False, and why")
        assert conditions["Ready"][:2] == ("False", "InvalidConfiguration")
        assert conditions["InvalidConfiguration"] == ("True", "InvalidConfiguration", event.message)
        assert a.agent.configurations is not None
        assert a.agent.configurations.get(NAMESPACE, "broken") is None

        # A valid Configuration edited into an invalid one keeps its last valid spec.
        await k.edit("cfg", lambda found: found["spec"].update(capacity=3, brokerSpec=both_kinds))
        events = await eventually(
            lambda: _events_about(k, "cfg", "InvalidConfiguration"), "an Event about the edit"
        )
        assert "its last valid spec stays in use" in events[0].message
        kept = a.agent.configurations.get(NAMESPACE, "cfg")
        assert kept is not None
        assert kept.spec.capacity == 2
        found = await k.instance(FOO0)
        assert found is not None
        assert found.spec.capacity == 2


async def _conditions(k: Api, name: str) -> dict[str, tuple[str, str, str]]:
    found = await k.custom.get_namespaced_custom_object(
        "akri.sh", "v0", NAMESPACE, "configurations", name
    )
    conditions = (found.get("status") or {}).get("conditions") or []
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in conditions}


async def _events_about(k: Api, name: str, reason: str) -> list[Any]:
    return [e for e in await k.events(reason) if e.involved_object.name == name]
