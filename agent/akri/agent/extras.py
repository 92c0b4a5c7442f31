"""What a device gives a container besides env vars: its mounts and device nodes, as the
kubelet's messages. Pure: the device store converts each device once, as discovery reports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from akri.discovery.model import Device
from akri.proto.deviceplugin.v1beta1 import api_pb2 as pb

Extras = tuple[Sequence[pb.Mount], Sequence[pb.DeviceSpec]]


def device_extras(device: Device) -> Extras:
    return (
        [
            pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only)
            for m in device.mounts
        ],
        [
            pb.DeviceSpec(
                container_path=s.container_path, host_path=s.host_path, permissions=s.permissions
            )
            for s in device.device_specs
        ],
    )
