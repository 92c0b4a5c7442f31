"""Fuzzing the agent with hostile Discover responses over the real gRPC boundary.

An external handler (served and registered as `akri-discovery-handler` does) streams device
lists of hostile ids, property names and values, sizes and duplicates to a running agent.
After every list the agent must publish exactly the Instances the list calls for, with the
properties it may carry, through writes the API accepts: it neither stalls nor gives up.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio import client

from akri.agent.discovery.host_paths import admitted
from akri.agent.discovery.merge import merge
from akri.agent.reconcile import MAX_PROPERTY_VALUE_BYTES, wanted_instances
from akri.api import Configuration
from akri.discovery.convert import response_to_proto
from akri.discovery.model import Device, DeviceSpec, Mount
from akri.discovery.server import HandlerServer
from tests.agent.running_agents import Api, configuration, running_agent
from tests.discovery.conftest import fast_backoff
from tests.discovery.scripted import Scripted
from tests.support import eventually

NODE = "node-f"
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
"""What a gRPC client receives at most, unless it says otherwise (the agent does not)."""
MAX_OBJECT_BYTES = 1024 * 1024
"""Well below the 1.5 MiB the API server (etcd) accepts for one object."""

texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", " ", "a" * 300, "\u202e", "é", "../..", "x=y", "$(reboot)", "\n"]),
)
values = st.one_of(
    texts,
    st.builds(lambda n: "v" * n, st.sampled_from([MAX_PROPERTY_VALUE_BYTES, 40_000, 200_000])),
)
keys = st.one_of(
    texts,
    st.sampled_from(["KEY", "DEBUG_ECHO_DESCRIPTION", "MODE", "a-b", "1X", "_"]),
)
paths = st.sampled_from(["/dev/video0", "", "relative", "/dev/../etc/shadow", "/x\n"])
devices = st.builds(
    Device,
    id=st.one_of(texts, st.sampled_from(["foo0", "foo1", "x" * 5000])),
    properties=st.dictionaries(keys, values, max_size=12),
    mounts=st.lists(st.builds(Mount, paths, paths, st.booleans()), max_size=2).map(tuple),
    device_specs=st.lists(st.builds(DeviceSpec, paths, paths, st.text(max_size=4)), max_size=2).map(
        tuple
    ),
)


@dataclass
class Fed:
    """A running agent, the external handler feeding it, and the Configuration using it."""

    api: Api
    handler: Scripted
    configuration: Configuration


@pytest.fixture
async def fed(api: client.ApiClient, socket_dir: Path) -> AsyncIterator[Fed]:
    handler = Scripted("fuzz")
    async with (
        running_agent(api, socket_dir, NODE, handlers=[], offline_grace=0.0),
        HandlerServer(handler, socket_dir / NODE, backoff=fast_backoff, watch_interval=0.05),
    ):
        users = Api(api)
        config = configuration(handler="fuzz", broker_properties={"MODE": "fuzz"})
        stored = await users.apply(config)
        yield Fed(users, handler, Configuration.from_wire(stored))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(listed=st.lists(devices, max_size=6))
async def test_any_device_list_becomes_exactly_its_instances(
    fed: Fed, listed: list[Device]
) -> None:
    """A list too large for a gRPC message fails the stream: the handler is reported, and its
    devices leave as when it stops. A device asking for a host path the agent refuses is left
    out."""
    fits = response_to_proto(listed).ByteSize() <= MAX_MESSAGE_BYTES
    event("fits one message" if fits else "too large for one message")
    kept, _ = admitted(listed, ())  # host paths: device nodes under /dev, no mount allowed
    wanted, _ = wanted_instances(fed.configuration, NODE, True, merge([kept]) if fits else [])
    fed.handler.feed.put_nowait(listed)

    async def published() -> bool:
        found = await fed.api.instances()
        return {n: i.spec.broker_properties for n, i in found.items()} == {
            n: w.properties for n, w in wanted.items()
        }

    await eventually(published, f"Instances {sorted(wanted)}")
    for instance in (await fed.api.instances()).values():
        assert len(json.dumps(instance.to_wire())) < MAX_OBJECT_BYTES
    if not fits:
        ready = await fed.api.condition("cfg", "Ready")
        assert ready is not None
        assert "RESOURCE_EXHAUSTED" in ready["message"]
