"""Model <-> discovery.proto conversions keep every field."""

from __future__ import annotations

from akri.discovery.convert import (
    properties_from_proto,
    request_to_proto,
    response_from_proto,
    response_to_proto,
)
from akri.discovery.model import Device, DeviceSpec, Mount
from akri.proto.discovery.v0 import discovery_pb2 as pb

DEVICE = Device(
    "/sys/devices/usb1",
    {"UDEV_DEVNODE": "/dev/video0", "K": ""},
    (Mount("/c", "/h", read_only=True), Mount("/c2", "/h2")),
    (DeviceSpec("/dev/video0", "/dev/video0", "rw"),),
)


def test_device_lists_round_trip_through_the_wire_format() -> None:
    wire = pb.DiscoverResponse.FromString(
        response_to_proto([DEVICE, Device("x")]).SerializeToString()
    )
    assert response_from_proto(wire) == [DEVICE, Device("x")]


def test_properties_round_trip_and_unset_bytes_read_as_empty() -> None:
    request = pb.DiscoverRequest.FromString(
        request_to_proto("d", {"a": b"\x00\x01", "b": b""}).SerializeToString()
    )
    assert request.discovery_details == "d"
    assert properties_from_proto(request) == {"a": b"\x00\x01", "b": b""}
    akri_style = pb.DiscoverRequest(discovery_properties={"unset": pb.ByteData()})
    assert properties_from_proto(akri_style) == {"unset": b""}
