"""The kubelet side of DRA mode on the simulated cluster: the agent's DRA plugin registered
through plugins_registry, claims prepared into CDI specs before a pod runs and unprepared after
it ends, across restarts of the agent and of the kubelet."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from kubernetes_asyncio import client

from akri import naming
from akri.agent.dra import cdi
from akri.agent.dra.server import KubeletDraPlugin
from akri.controller.context import Tuning
from akri.discovery_handlers.debug_echo import PROPERTY, DebugEcho
from akri.dra.mode import Mode
from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.dra.v1.api_pb2_grpc import DRAPluginStub
from akri.sim.cluster import Cluster, RuntimeOptions
from akri.sim.kubelet.objects import CDI_ANNOTATION
from tests.dra.test_dra_end_to_end import CFG, GROUP, VERSION, claims, configuration, pod
from tests.sim.users import User
from tests.support import eventually

NODE = "n"
IMAGE = "ghcr.io/akri-py/akri-py:0.1.0"
DESCRIPTIONS = ("foo0", "foo1")


def cluster_of_one(socket_dir: Path, *, shared: bool = True, mode: Mode = Mode.DRA) -> Cluster:
    cluster = Cluster([NODE], workdir=socket_dir, agents=True, controller=Tuning(), mode=mode)
    node = cluster.nodes[NODE]
    node.debug_echo = DebugEcho(shared=shared, availability_file=node.debug_echo_file)
    return cluster


def with_properties(unique: bool) -> dict[str, Any]:
    body = configuration(unique)
    body["spec"]["brokerProperties"] = {"COLOR": "red", "not-an-env-name": "x"}
    return body


def instance(description: str, shared: bool) -> str:
    return naming.instance_name(CFG, description, None if shared else NODE)


def suffixed(description: str, shared: bool) -> str:
    return naming.property_env_name(PROPERTY, instance(description, shared))


async def container_env(user: User, name: str) -> dict[str, str]:
    await user.wait_running(name)
    found = await user.core.read_namespaced_pod(name, "default")
    env: dict[str, str] = json.loads(found.metadata.annotations[CDI_ANNOTATION])["app"]["env"]
    return env


def plugin(cluster: Cluster) -> KubeletDraPlugin:
    agent = cluster.nodes[NODE].agent
    assert agent is not None
    assert agent.dra_plugin is not None
    return agent.dra_plugin


def cdi_specs(cluster: Cluster) -> list[Path]:
    return sorted((cluster.nodes[NODE].kubelet_dir / "cdi").glob("*.json"))


async def slices_published(cluster: Cluster) -> bool:
    api = client.CustomObjectsApi(cluster.api_client())
    slices = (await api.list_cluster_custom_object(GROUP, VERSION, "resourceslices"))["items"]
    return sum(len(s["spec"]["devices"]) for s in slices) >= len(DESCRIPTIONS)


async def gone(user: User, name: str) -> None:
    await user.core.delete_namespaced_pod(name, "default")
    await eventually(lambda: _absent(user, name), f"pod {name} to be gone")


async def _absent(user: User, name: str) -> bool:
    return await user.phase(name) is None


@pytest.mark.parametrize(("shared", "unique"), [(True, True), (False, False)])
async def test_pods_get_the_broker_env_through_cdi_and_lose_it_when_they_end(
    socket_dir: Path, shared: bool, unique: bool
) -> None:
    """`akri.sh/cfg: N` in a pod's limits: the claim the scheduler made is prepared by the
    agent into a CDI spec whose env follows the device plugin's rules (suffixed device
    properties, plain ones for a single device, the Configuration's brokerProperties; names
    that are no env names dropped); the pod's end unprepares it."""
    async with cluster_of_one(socket_dir, shared=shared) as cluster:
        user = User(cluster)
        await user.apply(with_properties(unique))
        await eventually(lambda: slices_published(cluster), "the devices to be published")

        await user.run(pod("one", 1))
        env = await container_env(user, "one")
        [description] = [d for d in DESCRIPTIONS if suffixed(d, shared) in env]
        assert env[suffixed(description, shared)] == description
        assert env[PROPERTY] == description
        assert env["COLOR"] == "red"
        assert "not-an-env-name" not in env

        kubelet = cluster.nodes[NODE].kubelet
        [claim] = await claims(cluster)
        uid = claim["metadata"]["uid"]
        assert [p.name for p in cdi_specs(cluster)] == [cdi.spec_file_name(uid)]
        assert set(plugin(cluster).plugin.prepared) == {uid}

        if unique:  # two distinct devices for one container: no plain property
            await user.run(pod("two", 2))
            env = await container_env(user, "two")
            assert {env[suffixed(d, shared)] for d in DESCRIPTIONS} == set(DESCRIPTIONS)
            assert PROPERTY not in env
            await gone(user, "two")

        await gone(user, "one")
        await eventually(
            lambda: not cdi_specs(cluster) and not plugin(cluster).plugin.prepared,
            "the CDI specs and their records to be removed",
        )
        await eventually(lambda: not kubelet.dra.claims, "the kubelet to forget the claims")


@pytest.fixture
async def cluster(socket_dir: Path) -> AsyncIterator[Cluster]:
    async with cluster_of_one(socket_dir) as running:
        yield running


async def test_prepared_claims_survive_agent_and_kubelet_restarts(cluster: Cluster) -> None:
    """A running pod's claim stays prepared while the agent and then the kubelet restart (the
    agent reads its checkpoint, the kubelet keeps its records and does not prepare again, and
    republished slices let a new pod in); unpreparing after both restarts works."""
    user = User(cluster)
    kubelet = cluster.nodes[NODE].kubelet
    await user.apply(with_properties(unique=True))
    await eventually(lambda: slices_published(cluster), "the devices to be published")
    await user.run(pod("first", 1))
    await container_env(user, "first")
    [claim] = await claims(cluster)
    uid = claim["metadata"]["uid"]
    prepares = kubelet.dra.calls["prepare"]

    await cluster.stop_agent(NODE)
    await eventually(lambda: not kubelet.dra.drivers(), "the kubelet to drop the plugin")
    agent = cluster.start_agent(NODE)
    await eventually(lambda: agent.dra_plugin is not None, "a new plugin")
    assert set(plugin(cluster).plugin.prepared) == {uid}  # from the checkpoint
    await eventually(lambda: kubelet.dra.drivers() == {"akri.sh"}, "the plugin to register")

    await kubelet.restart()
    await eventually(lambda: kubelet.dra.drivers() == {"akri.sh"}, "registration after restart")
    assert set(kubelet.dra.claims) == {("default", claim["metadata"]["name"])}
    await eventually(lambda: slices_published(cluster), "the wiped slices to be published again")
    await user.run(pod("second", 1))
    await container_env(user, "second")
    assert kubelet.dra.calls["prepare"] == prepares + 1  # the second pod's claim only
    assert await user.phase("first") == "Running"

    await gone(user, "first")
    await eventually(
        lambda: (
            cdi.spec_file_name(uid) not in {p.name for p in cdi_specs(cluster)}
            and uid not in plugin(cluster).plugin.prepared
        ),
        "the first claim's CDI spec and record to be removed",
    )
    await gone(user, "second")
    await eventually(lambda: not cdi_specs(cluster), "every CDI spec to be removed")


async def test_prepare_and_unprepare_are_idempotent_and_fail_per_claim(cluster: Cluster) -> None:
    """Asked again, the plugin answers the same without writing twice; an unknown claim fails
    alone; unpreparing twice, or a claim never prepared, succeeds."""
    user = User(cluster)
    await user.apply(with_properties(unique=True))
    await eventually(lambda: slices_published(cluster), "the devices to be published")
    await user.run(pod("p", 1))
    await container_env(user, "p")
    [stored] = await claims(cluster)
    meta = stored["metadata"]
    claim = dra.Claim(namespace="default", uid=meta["uid"], name=meta["name"])
    stranger = dra.Claim(namespace="default", uid="no-such-uid", name="no-such-claim")
    async with grpc.aio.insecure_channel(f"unix://{plugin(cluster).socket}") as channel:
        stub = DRAPluginStub(channel)
        request = dra.NodePrepareResourcesRequest(claims=[claim, stranger])
        first = await stub.NodePrepareResources(request)
        second = await stub.NodePrepareResources(request)
        assert first == second
        assert first.claims[claim.uid].error == ""
        [device] = first.claims[claim.uid].devices
        assert list(device.cdi_device_ids) == [cdi.device_id(claim.uid, "container-0-request-0")]
        assert device.HasField("share_id")  # a shared device (consumable capacity)
        assert "not found" in first.claims[stranger.uid].error.lower()

        unprepare = dra.NodeUnprepareResourcesRequest(claims=[claim, stranger])
        for _ in range(2):
            answer = await stub.NodeUnprepareResources(unprepare)
            assert {uid: a.error for uid, a in answer.claims.items()} == {
                claim.uid: "",
                stranger.uid: "",
            }
    assert not cdi_specs(cluster)
    assert plugin(cluster).plugin.prepared == {}


async def test_the_kubelet_hears_device_health(socket_dir: Path) -> None:
    """Both devices healthy; one that goes offline past the grace is reported unhealthy."""
    cluster = Cluster(
        [NODE],
        workdir=socket_dir,
        agents=True,
        controller=Tuning(),
        mode=Mode.DRA,
        agent_options={"offline_grace": 0.2},
    )
    async with cluster:
        user = User(cluster)
        await user.apply(with_properties(unique=True))
        kubelet = cluster.nodes[NODE].kubelet
        keys = {d: ("akri.sh", f"{CFG}/shared", instance(d, shared=True)) for d in DESCRIPTIONS}
        healthy = dict.fromkeys(keys.values(), ("HEALTHY", ""))
        await eventually(lambda: kubelet.dra.health == healthy, "both devices reported healthy")
        cluster.nodes[NODE].debug_echo.set_offline(["foo1"])
        lost = ("UNHEALTHY", "the device is no longer seen on this node")
        await eventually(
            lambda: kubelet.dra.health == {**healthy, keys["foo1"]: lost},
            "foo1 reported unhealthy, as gone from the node",
        )


@pytest.mark.parametrize(("dra_api", "expected"), [(True, Mode.DRA), (False, Mode.DEVICE_PLUGIN)])
async def test_auto_picks_the_mode_the_cluster_offers(
    socket_dir: Path, dra_api: bool, expected: Mode
) -> None:
    """The simulated kubelets offer plugin registration, so the API decides."""
    async with Cluster(
        [NODE], workdir=socket_dir, agents=True, mode=Mode.AUTO, dra_api=dra_api
    ) as cluster:
        agent = cluster.nodes[NODE].agent
        assert agent is not None
        await eventually(lambda: agent.mode is not None, "the agent to pick a mode")
        assert agent.mode is expected


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)
async def test_a_container_process_sees_the_broker_env(socket_dir: Path) -> None:
    """A pod of the project's image runs as a process: its program reads the env its CDI
    device gave it, as a broker would."""
    options = RuntimeOptions(backoff_initial_s=0.2, backoff_max_s=1.0)
    async with Cluster(
        [NODE],
        workdir=socket_dir,
        agents=True,
        controller=Tuning(),
        mode=Mode.DRA,
        processes=options,
    ) as cluster:
        user = User(cluster)
        await user.apply(with_properties(unique=True))
        await eventually(lambda: slices_published(cluster), "the devices to be published")
        broker = pod("broker", 1)
        broker["spec"]["containers"][0].update(
            image=IMAGE,
            command=["sh", "-c", f'echo "color=$COLOR device=${PROPERTY}"; exec sleep 3600'],
        )
        await user.run(broker)
        env = await container_env(user, "broker")

        async def printed() -> str:
            text: str = await user.core.read_namespaced_pod_log("broker", "default")
            return text

        line = await eventually(printed, "the broker to print its env")
        assert line.strip() == f"color=red device={env[PROPERTY]}"
