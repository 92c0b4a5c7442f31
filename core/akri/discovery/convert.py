"""Conversions between the discovery model and `discovery.proto` messages, used at the edges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from akri.discovery.model import Device, DeviceSpec, Mount
from akri.proto.discovery.v0 import discovery_pb2 as pb


def device_to_proto(device: Device) -> pb.Device:
    return pb.Device(
        id=device.id,
        properties=dict(device.properties),
        mounts=[
            pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
            for m in device.mounts
        ],
        device_specs=[
            pb.DeviceSpec(
                container_path=s.container_path, host_path=s.host_path, permissions=s.permissions
            )
            for s in device.device_specs
        ],
    )


def device_from_proto(message: pb.Device) -> Device:
    return Device(
        id=message.id,
        properties=dict(message.properties),
        mounts=tuple(Mount(m.container_path, m.host_path, m.read_only) for m in message.mounts),
        device_specs=tuple(
            DeviceSpec(s.container_path, s.host_path, s.permissions) for s in message.device_specs
        ),
    )


def response_to_proto(devices: Iterable[Device]) -> pb.DiscoverResponse:
    return pb.DiscoverResponse(devices=[device_to_proto(d) for d in devices])


def response_from_proto(message: pb.DiscoverResponse) -> list[Device]:
    return [device_from_proto(d) for d in message.devices]


def request_to_proto(details: str, properties: Mapping[str, bytes]) -> pb.DiscoverRequest:
    return pb.DiscoverRequest(
        discovery_details=details,
        discovery_properties={k: pb.ByteData(vec=v) for k, v in properties.items()},
    )


def properties_from_proto(message: pb.DiscoverRequest) -> dict[str, bytes]:
    """An unset `ByteData.vec` (Akri allows it) reads as empty bytes."""
    return {k: v.vec for k, v in message.discovery_properties.items()}
