"""What a container receives from Allocate: env vars, mounts and device nodes (docs/design.md §4).

Pure: the plugins pass the Instances each container was granted and get the response back,
together with the properties that had to be left out, which the caller logs once.

Env rules: every property of every granted device as `KEY_<DIGEST>`, so several devices fit in
one container side by side; plain `KEY` too when the container got exactly one device (several
slots of one Instance are still one device); the Configuration's brokerProperties plain, last,
so they win. Names that are not env names and oversized values are dropped, not truncated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from akri.agent.extras import Extras
from akri.naming import is_env_name, property_env_name
from akri.proto.deviceplugin.v1beta1.api_pb2 import (
    AllocateResponse,
    ContainerAllocateResponse,
    DeviceSpec,
    Mount,
)

MAX_ENV_VALUE_BYTES = 32 * 1024
"""Larger values are skipped: runtimes cap the whole environment, and one huge property
(a certificate, a blob) would fail every container that receives it."""

CONFIGURATION = ""
"""`Dropped.owner` of a Configuration brokerProperty."""


@dataclass(frozen=True)
class Dropped:
    """A property left out of the env: `owner` is the Instance, or CONFIGURATION."""

    owner: str
    key: str
    reason: str

    def __str__(self) -> str:
        if self.owner == CONFIGURATION:
            where = "the Configuration's brokerProperties"
        else:
            where = f"Instance {self.owner}"
        return f"property {self.key!r} of {where} is not passed to containers: {self.reason}"


def _problem(key: str, value: str) -> str | None:
    if not is_env_name(key):
        return "not a valid environment variable name"
    if (size := len(value.encode())) > MAX_ENV_VALUE_BYTES:
        return f"its value is {size} bytes, over the {MAX_ENV_VALUE_BYTES}-byte limit"
    return None


def _usable(
    owner: str, properties: Mapping[str, str], dropped: set[Dropped]
) -> Iterable[tuple[str, str]]:
    for key, value in sorted(properties.items()):
        if (problem := _problem(key, value)) is None:
            yield key, value
        else:
            dropped.add(Dropped(owner, key, problem))


def container_env(
    instances: Sequence[str],
    properties: Mapping[str, Mapping[str, str]],
    configuration_properties: Mapping[str, str],
    dropped: set[Dropped],
) -> dict[str, str]:
    """The env of a container granted slots of `instances`; adds what it leaves out to `dropped`."""
    devices = list(dict.fromkeys(instances))
    env: dict[str, str] = {}
    for instance in devices:
        for key, value in _usable(instance, properties.get(instance, {}), dropped):
            env[property_env_name(key, instance)] = value
            if len(devices) == 1:
                env[key] = value
    env.update(_usable(CONFIGURATION, configuration_properties, dropped))
    return env


def _container_response(
    instances: Sequence[str],
    properties: Mapping[str, Mapping[str, str]],
    configuration_properties: Mapping[str, str],
    extras: Mapping[str, Extras],
    dropped: set[Dropped],
) -> ContainerAllocateResponse:
    mounts: dict[str, Mount] = {}
    devices: dict[str, DeviceSpec] = {}
    for instance in dict.fromkeys(instances):
        instance_mounts, instance_devices = extras[instance]
        for mount in instance_mounts:  # one path holds one thing: the first device's wins
            mounts.setdefault(mount.container_path, mount)
        for device in instance_devices:
            devices.setdefault(device.container_path, device)
    return ContainerAllocateResponse(
        envs=container_env(instances, properties, configuration_properties, dropped),
        mounts=list(mounts.values()),
        devices=list(devices.values()),
    )


def allocate_response(
    containers: Sequence[Sequence[str]],
    properties: Mapping[str, Mapping[str, str]],
    configuration_properties: Mapping[str, str],
    extras: Mapping[str, Extras],
) -> tuple[AllocateResponse, set[Dropped]]:
    """One response per container request, in order; `containers` names each one's Instances.

    `properties` maps an Instance name to its brokerProperties, `extras` to its mounts and
    device nodes (`DeviceStore.wait`): every granted Instance must be in it.
    """
    dropped: set[Dropped] = set()
    response = AllocateResponse(
        container_responses=[
            _container_response(instances, properties, configuration_properties, extras, dropped)
            for instances in containers
        ]
    )
    return response, dropped
