"""The checked-in protocol code: no drift from the .proto sources, exact wire identities."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from google.protobuf import descriptor_pool
from google.protobuf.descriptor import FieldDescriptor

from akri.proto import generate
from akri.proto.deviceplugin.v1beta1 import api_pb2 as deviceplugin
from akri.proto.discovery.v0 import discovery_pb2 as discovery
from akri.proto.dra.v1 import api_pb2 as dra
from akri.proto.drahealth.v1alpha1 import api_pb2 as drahealth
from akri.proto.pluginregistration.v1 import api_pb2 as pluginregistration
from akri.proto.podresources.v1 import api_pb2 as podresources
from akri.sim.proto import generate as sim_generate


@pytest.mark.parametrize("tree", [generate.CORE, sim_generate.TREE], ids=["core", "sim"])
def test_generated_code_matches_the_proto_sources(tree: generate.ProtoTree, tmp_path: Path) -> None:
    regenerated = generate.generate(tree, tmp_path)
    checked_in = tree.generated_files(tree.source_root)
    assert regenerated == checked_in, "generated file set differs: run `make protos`"
    assert len(checked_in) == 4 * len(tree.sources())
    for relative in checked_in:
        fresh = (tmp_path / relative).read_bytes()
        assert fresh == (tree.source_root / relative).read_bytes(), (
            f"{relative} is stale: run `make protos`"
        )


@pytest.mark.parametrize(
    ("module", "service", "methods"),
    [
        (deviceplugin, "v1beta1.Registration", ["Register"]),
        (
            deviceplugin,
            "v1beta1.DevicePlugin",
            [
                "GetDevicePluginOptions",
                "ListAndWatch",
                "GetPreferredAllocation",
                "Allocate",
                "PreStartContainer",
            ],
        ),
        (podresources, "v1.PodResourcesLister", ["List", "GetAllocatableResources", "Get"]),
        (discovery, "v0.Registration", ["RegisterDiscoveryHandler"]),
        (discovery, "v0.DiscoveryHandler", ["Discover"]),
        (
            dra,
            "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
            ["NodePrepareResources", "NodeUnprepareResources"],
        ),
        (drahealth, "v1alpha1.DRAResourceHealth", ["NodeWatchResources"]),
        (
            pluginregistration,
            "pluginregistration.Registration",
            ["GetInfo", "NotifyRegistrationStatus"],
        ),
    ],
)
def test_services_have_the_exact_method_paths(
    module: ModuleType, service: str, methods: list[str]
) -> None:
    """Peers address methods as /<package>.<Service>/<Method>; any other package is invisible."""
    found = descriptor_pool.Default().FindServiceByName(service)
    assert found.file.name == module.DESCRIPTOR.name
    assert [f"/{service}/{m.name}" for m in found.methods] == [f"/{service}/{m}" for m in methods]


@pytest.mark.parametrize(
    ("method", "server_streaming"),
    [
        ("v1beta1.DevicePlugin.ListAndWatch", True),
        ("v1beta1.DevicePlugin.Allocate", False),
        ("v0.DiscoveryHandler.Discover", True),
        ("k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin.NodePrepareResources", False),
        ("v1alpha1.DRAResourceHealth.NodeWatchResources", True),
        ("pluginregistration.Registration.GetInfo", False),
    ],
)
def test_streaming_shape(method: str, server_streaming: bool) -> None:
    found = descriptor_pool.Default().FindMethodByName(method)
    assert (found.client_streaming, found.server_streaming) == (False, server_streaming)


# (message, field, number, repeated) — from the public API definitions.
FIELDS = [
    ("v1beta1.RegisterRequest", "version", 1, False),
    ("v1beta1.RegisterRequest", "endpoint", 2, False),
    ("v1beta1.RegisterRequest", "resource_name", 3, False),
    ("v1beta1.RegisterRequest", "options", 4, False),
    ("v1beta1.DevicePluginOptions", "pre_start_required", 1, False),
    ("v1beta1.DevicePluginOptions", "get_preferred_allocation_available", 2, False),
    ("v1beta1.Device", "ID", 1, False),
    ("v1beta1.Device", "health", 2, False),
    ("v1beta1.Device", "topology", 3, False),
    ("v1beta1.NUMANode", "ID", 1, False),
    ("v1beta1.ContainerPreferredAllocationRequest", "available_deviceIDs", 1, True),
    ("v1beta1.ContainerPreferredAllocationRequest", "must_include_deviceIDs", 2, True),
    ("v1beta1.ContainerPreferredAllocationRequest", "allocation_size", 3, False),
    ("v1beta1.ContainerPreferredAllocationResponse", "deviceIDs", 1, True),
    ("v1beta1.ContainerAllocateRequest", "devices_ids", 1, True),
    ("v1beta1.PreStartContainerRequest", "devices_ids", 1, True),
    ("v1beta1.ContainerAllocateResponse", "envs", 1, True),
    ("v1beta1.ContainerAllocateResponse", "mounts", 2, True),
    ("v1beta1.ContainerAllocateResponse", "devices", 3, True),
    ("v1beta1.ContainerAllocateResponse", "annotations", 4, True),
    ("v1beta1.ContainerAllocateResponse", "cdi_devices", 5, True),
    ("v1beta1.CDIDevice", "name", 1, False),
    ("v1beta1.Mount", "read_only", 3, False),
    ("v1beta1.DeviceSpec", "permissions", 3, False),
    ("v1.AllocatableResourcesResponse", "devices", 1, True),
    ("v1.AllocatableResourcesResponse", "cpu_ids", 2, True),
    ("v1.AllocatableResourcesResponse", "memory", 3, True),
    ("v1.PodResources", "containers", 3, True),
    ("v1.ContainerResources", "devices", 2, True),
    ("v1.ContainerResources", "cpu_ids", 3, True),
    ("v1.ContainerResources", "memory", 4, True),
    ("v1.ContainerResources", "dynamic_resources", 5, True),
    ("v1.ContainerDevices", "resource_name", 1, False),
    ("v1.ContainerDevices", "device_ids", 2, True),
    ("v1.ContainerDevices", "topology", 3, False),
    ("v1.ContainerMemory", "size", 2, False),
    ("v1.DynamicResource", "claim_name", 2, False),
    ("v1.ClaimResource", "device_name", 4, False),
    ("v1.GetPodResourcesRequest", "pod_name", 1, False),
    ("v1.GetPodResourcesRequest", "pod_namespace", 2, False),
    ("v1.GetPodResourcesResponse", "pod_resources", 1, False),
    ("v0.RegisterDiscoveryHandlerRequest", "name", 1, False),
    ("v0.RegisterDiscoveryHandlerRequest", "endpoint", 2, False),
    ("v0.RegisterDiscoveryHandlerRequest", "endpoint_type", 3, False),
    ("v0.RegisterDiscoveryHandlerRequest", "shared", 4, False),
    ("v0.ByteData", "vec", 1, False),
    ("v0.DiscoverRequest", "discovery_details", 1, False),
    ("v0.DiscoverRequest", "discovery_properties", 2, True),
    ("v0.DiscoverResponse", "devices", 1, True),
    ("v0.Device", "id", 1, False),
    ("v0.Device", "properties", 2, True),
    ("v0.Device", "mounts", 3, True),
    ("v0.Device", "device_specs", 4, True),
    ("pluginregistration.PluginInfo", "type", 1, False),
    ("pluginregistration.PluginInfo", "name", 2, False),
    ("pluginregistration.PluginInfo", "endpoint", 3, False),
    ("pluginregistration.PluginInfo", "supported_versions", 4, True),
    ("pluginregistration.RegistrationStatus", "plugin_registered", 1, False),
    ("pluginregistration.RegistrationStatus", "error", 2, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodePrepareResourcesRequest", "claims", 1, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodePrepareResourcesResponse", "claims", 1, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodePrepareResourceResponse", "devices", 1, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodePrepareResourceResponse", "error", 2, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Device", "request_names", 1, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Device", "pool_name", 2, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Device", "device_name", 3, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Device", "cdi_device_ids", 4, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Device", "share_id", 5, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodeUnprepareResourcesResponse", "claims", 1, True),
    ("k8s.io.kubelet.pkg.apis.dra.v1.NodeUnprepareResourceResponse", "error", 1, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Claim", "namespace", 1, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Claim", "uid", 2, False),
    ("k8s.io.kubelet.pkg.apis.dra.v1.Claim", "name", 3, False),
    ("v1alpha1.NodeWatchResourcesResponse", "devices", 1, True),
    ("v1alpha1.DeviceIdentifier", "pool_name", 1, False),
    ("v1alpha1.DeviceIdentifier", "device_name", 2, False),
    ("v1alpha1.DeviceHealth", "device", 1, False),
    ("v1alpha1.DeviceHealth", "health", 2, False),
    ("v1alpha1.DeviceHealth", "last_updated_time", 3, False),
    ("v1alpha1.DeviceHealth", "health_check_timeout_seconds", 4, False),
    ("v1alpha1.DeviceHealth", "message", 5, False),
]


@pytest.mark.parametrize(("message", "field", "number", "repeated"), FIELDS)
def test_field_numbers_match_the_public_definitions(
    message: str, field: str, number: int, repeated: bool
) -> None:
    descriptor = descriptor_pool.Default().FindMessageTypeByName(message)
    found = descriptor.fields_by_name[field]
    assert found.number == number
    assert found.is_repeated == repeated


def test_discovery_details_are_optional_bytes_and_endpoint_types_match_akri() -> None:
    assert discovery.ByteData().HasField("vec") is False
    assert discovery.ByteData(vec=b"").HasField("vec") is True
    kind = discovery.RegisterDiscoveryHandlerRequest.EndpointType
    assert (kind.Value("UDS"), kind.Value("NETWORK")) == (0, 1)
    assert discovery.ByteData.DESCRIPTOR.fields_by_name["vec"].type == FieldDescriptor.TYPE_BYTES


def test_same_named_messages_of_the_three_packages_coexist() -> None:
    """One process imports all three protocols: full names must differ by package."""
    assert deviceplugin.Device.DESCRIPTOR.full_name == "v1beta1.Device"
    assert discovery.Device.DESCRIPTOR.full_name == "v0.Device"
    assert deviceplugin.TopologyInfo.DESCRIPTOR.full_name == "v1beta1.TopologyInfo"
    assert podresources.TopologyInfo.DESCRIPTOR.full_name == "v1.TopologyInfo"
    assert deviceplugin.Mount.DESCRIPTOR.full_name != discovery.Mount.DESCRIPTOR.full_name


def test_dra_share_id_is_optional_and_health_values_match_the_kubelet() -> None:
    assert dra.Device().HasField("share_id") is False
    assert dra.Device(share_id="").HasField("share_id") is True
    status = drahealth.HealthStatus
    assert (status.Value("UNKNOWN"), status.Value("HEALTHY"), status.Value("UNHEALTHY")) == (
        0,
        1,
        2,
    )
