"""What Allocate adds for a device besides env vars: its mounts and device nodes.

They come from discovery and are not stored in the Instance, so the plugins ask the
Configuration watcher for the devices this node discovered, converted here to the kubelet's
messages.
"""

from __future__ import annotations

from akri.agent.discovery.model import Device
from akri.agent.plugins import response
from akri.proto.deviceplugin.v1beta1 import api_pb2 as pb


def device_extras(device: Device) -> response.Extras:
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
