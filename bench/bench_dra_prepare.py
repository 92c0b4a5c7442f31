"""DRA mode benchmark, the kubelet side: how long the agent's DRA plugin takes to prepare a
claim (NodePrepareResources over its unix socket, as the kubelet calls it).

200 allocated ResourceClaims of one device each, on the API emulator, prepared one per call:
- first prepare: the claim read from the API, its CDI spec and the checkpoint written;
- prepare again (a kubelet retry or restart): answered from the checkpoint;
- unprepare: the CDI spec deleted, the checkpoint written.
The checkpoint holds every prepared claim, so later calls write a larger file.
Run: `python bench/bench_dra_prepare.py`.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from _common import Section, finish, latencies_ms, quiet_logs
from kubernetes_asyncio import client

from akri.agent.devices import DeviceStore
from akri.agent.dra.plugin import DraPlugin, PluginEnv
from akri.agent.dra.server import KubeletDraPlugin
from akri.agent.instances import InstanceCache
from akri.api import Configuration, crd_definitions
from akri.discovery.model import Device
from akri.dra.slices import local_pool_name
from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.dra.v1.api_pb2_grpc import DRAPluginStub
from akri.sim.apiserver import ApiServer
from akri.sim.cluster import load_client

if TYPE_CHECKING:
    from akri.proto.dra.v1.api_pb2_grpc import DRAPluginAsyncStub

NODE = "node-0"
CLAIMS = 200
CONFIGURATION = Configuration.from_wire(
    {
        "apiVersion": "akri.sh/v0",
        "kind": "Configuration",
        "metadata": {"name": "cam", "namespace": "default"},
        "spec": {
            "discoveryHandler": {"name": "onvif"},
            "capacity": 2,
            "uniqueDevices": True,
            "brokerProperties": {"RESOLUTION": "1080p"},
        },
    }
)


async def populate(api: client.ApiClient) -> list[dra.Claim]:
    """An Instance and an allocated claim of its device per claim."""
    custom = client.CustomObjectsApi(api)
    claims = []
    for i in range(CLAIMS):
        name = f"cam-{i:06x}"
        instance = {
            "apiVersion": "akri.sh/v0",
            "kind": "Instance",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "configurationName": "cam",
                "capacity": 2,
                "nodes": [NODE],
                "brokerProperties": {"ONVIF_DEVICE_IP_ADDRESS": f"10.0.{i // 256}.{i % 256}"},
            },
        }
        await custom.create_namespaced_custom_object(
            "akri.sh", "v0", "default", "instances", instance
        )
        claim = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": f"claim-{i}", "namespace": "default"},
            "spec": {
                "devices": {
                    "requests": [{"name": "cam", "exactly": {"deviceClassName": "cam.akri.sh"}}]
                }
            },
        }
        created = await custom.create_namespaced_custom_object(
            "resource.k8s.io", "v1", "default", "resourceclaims", claim
        )
        result = {
            "request": "cam",
            "driver": "akri.sh",
            "pool": local_pool_name("cam", NODE),
            "device": name,
        }
        created["status"] = {"allocation": {"devices": {"results": [result]}}}
        await custom.replace_namespaced_custom_object_status(
            "resource.k8s.io",
            "v1",
            "default",
            "resourceclaims",
            created["metadata"]["name"],
            created,
        )
        claims.append(
            dra.Claim(namespace="default", uid=created["metadata"]["uid"], name=f"claim-{i}")
        )
    return claims


def discovered() -> DeviceStore:
    """Every populated device, as discovery reports it (no mounts or device nodes)."""
    devices = DeviceStore()
    devices.report("onvif", {f"cam-{i:06x}": Device(f"cam-{i:06x}") for i in range(CLAIMS)})
    return devices


async def call(stub: DRAPluginAsyncStub, kind: str, claim: dra.Claim) -> str:
    """One kubelet call for one claim; its error, empty when none."""
    if kind == "unprepare":
        request = dra.NodeUnprepareResourcesRequest(claims=[claim])
        return str((await stub.NodeUnprepareResources(request)).claims[claim.uid].error)
    answer = await stub.NodePrepareResources(dra.NodePrepareResourcesRequest(claims=[claim]))
    return str(answer.claims[claim.uid].error)


async def main() -> None:
    quiet_logs()
    began, load_before = time.monotonic(), os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="akri-bench-", dir="/tmp") as workdir:
        root = Path(workdir)
        async with ApiServer() as server:
            await server.apply_definitions(crd_definitions())
            api = await load_client(server.write_kubeconfig(root / "kubeconfig"))
            async with api:
                claims = await populate(api)
                cache = InstanceCache(api)
                caching = asyncio.create_task(cache.run())
                await cache.synced.wait()
                plugin = DraPlugin(
                    PluginEnv(
                        api_client=api,
                        cache=cache,
                        configurations=lambda namespace, name: CONFIGURATION,
                        devices=discovered(),
                        rediscovery_wait=1.0,
                        node=NODE,
                        state_dir=root / "plugins" / "akri.sh",
                        cdi_dir=root / "cdi",
                    )
                )
                served = KubeletDraPlugin(plugin, root / "plugins_registry")
                serving = asyncio.create_task(served.run())
                samples: dict[str, list[float]] = {"first": [], "again": [], "unprepare": []}
                async with grpc.aio.insecure_channel(f"unix://{served.socket}") as channel:
                    async with asyncio.timeout(10):
                        await channel.channel_ready()  # the plugin serves
                    stub: DRAPluginAsyncStub = DRAPluginStub(channel)
                    for kind in samples:
                        for claim in claims:
                            started = time.perf_counter()
                            error = await call(stub, kind, claim)
                            samples[kind].append(time.perf_counter() - started)
                            assert not error, error
                for task in (serving, caching):
                    task.cancel()
                await asyncio.gather(serving, caching, return_exceptions=True)
    finish(
        [
            Section(
                f"DRA plugin NodePrepareResources, one claim per call ({CLAIMS} claims)",
                [
                    (
                        "prepare (claim read from the API, CDI spec + checkpoint written)",
                        latencies_ms(samples["first"]),
                    ),
                    ("prepare again (from the checkpoint)", latencies_ms(samples["again"])),
                    (
                        "unprepare (CDI spec removed, checkpoint written)",
                        latencies_ms(samples["unprepare"]),
                    ),
                ],
                "dra kubelet plugin: ",
            )
        ],
        began,
        load_before,
    )


if __name__ == "__main__":
    asyncio.run(main())
