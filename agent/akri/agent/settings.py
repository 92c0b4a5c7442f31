"""The agent's settings, all from environment variables (a DaemonSet sets them from the chart).

Every value is checked up front, so a typo stops the agent at start with the variable's name
and the reason, instead of surfacing later as a device that is never offered.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    FilePath,
    ValidationInfo,
    field_validator,
)
from pydantic_settings import BaseSettings, SettingsConfigDict

from akri.discovery.debug_echo import DEFAULT_AVAILABILITY_FILE
from akri.discovery.registration import DEFAULT_DIRECTORY
from akri.dra.mode import Mode
from akri.durations import OFFLINE_GRACE_S, Duration
from akri.naming import object_name_problem
from akri.owner_only import directory_problem
from akri.proto.deviceplugin.v1beta1.constants import DEVICE_PLUGIN_PATH
from akri.proto.podresources.v1.constants import POD_RESOURCES_SOCKET
from akri.settings import load, parse_bool

PLUGINS_REGISTRY = "/var/lib/kubelet/plugins_registry"
KUBELET_PLUGINS = "/var/lib/kubelet/plugins"
CDI_DIR = "/var/run/cdi"


def _node_name(name: str) -> str:
    if (problem := object_name_problem(name, "a Kubernetes node")) is not None:
        raise ValueError(problem)
    return name


def _flag(value: object) -> object:
    return parse_bool("value", value) if isinstance(value, str) else value


PositiveDuration = Annotated[Duration, Field(gt=0)]


def _safe_directory(directory: Path) -> Path:
    if (problem := directory_problem(directory)) is not None:
        raise ValueError(problem)
    return directory


SocketDirectory = Annotated[Path, AfterValidator(_safe_directory)]
"""Where the agent serves sockets: refused when a group or every user may write there."""


def _mount_roots(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """Absolute directories, with their links followed as the agent will follow handlers'."""
    relative = [str(p) for p in paths if not p.is_absolute()]
    if relative:
        raise ValueError(f"mount directories must be absolute paths: {', '.join(relative)}")
    return tuple(Path(os.path.realpath(p)) for p in paths)


class AgentSettings(BaseSettings):
    """One field per environment variable: `agent_node_name` is read from AGENT_NODE_NAME."""

    model_config = SettingsConfigDict(extra="ignore", frozen=True, use_attribute_docstrings=True)

    agent_node_name: Annotated[str, AfterValidator(_node_name)]
    """This node's name (the Pod's spec.nodeName); the agent's identity in every Instance."""
    akri_namespace: str | None = None
    """Follow Configurations and Instances of this namespace only; all namespaces when unset."""
    kubeconfig: FilePath | None = None
    """A kubeconfig file; the in-cluster service account when unset."""
    device_plugins_dir: SocketDirectory = Field(Path(DEVICE_PLUGIN_PATH), validate_default=True)
    """Where the kubelet's kubelet.sock is and the device plugins' sockets go."""
    pod_resources_socket: Path = Path(POD_RESOURCES_SOCKET)
    """The kubelet's PodResources socket, to see which slots containers still use."""
    discovery_handlers_directory: SocketDirectory = Field(DEFAULT_DIRECTORY, validate_default=True)
    """Where agent-registration.sock is served for external discovery handlers."""
    enable_debug_echo: str | None = None
    """Any value, even empty, embeds the debugEcho handler (as in Akri)."""
    debug_echo_instances_shared: Annotated[bool, BeforeValidator(_flag)] = True
    """Whether the embedded debugEcho reports shared devices ("true" or "false")."""
    debug_echo_availability_file: Path = DEFAULT_AVAILABILITY_FILE
    """Write OFFLINE (or a description per line) here to take debugEcho devices offline."""
    allowed_mount_paths: Annotated[tuple[Path, ...], AfterValidator(_mount_roots)] = ()
    """Host directories (a JSON list) under which discovered devices may have mounts; a device
    asking to mount anything else is left out (RefusedHostPath). None by default."""
    metrics_port: int = Field(default=8080, ge=0, le=65535)
    """Port of /metrics, /healthz and /readyz; 0 serves none of them."""
    offline_grace: Duration = OFFLINE_GRACE_S
    """How long a shared device may be missing before this node leaves its Instance."""
    reclaim_grace: PositiveDuration = 20.0
    """How long a held slot may go unused by any container before it is freed."""
    reclaim_interval: PositiveDuration = 10.0
    """How often held slots are compared with the kubelet's PodResources."""
    allocate_timeout: PositiveDuration = 5.0
    """Longest an Allocate call may take before the kubelet gets an error."""
    rediscovery_wait: Duration | None = None
    """How long an Allocate (or DRA prepare) waits for discovery to report a device whose
    mounts and device nodes it does not know yet (just after the agent started) before it
    refuses it; shorter than allocate_timeout, three fifths of it (3s) when unset."""
    akri_mode: Mode = Mode.DEVICE_PLUGIN
    """`device-plugin`, `dra` or `auto` (DRA when the API serves resource.k8s.io/v1 and the
    kubelet's plugins_registry directory exists)."""
    plugins_registry_dir: Path = Path(PLUGINS_REGISTRY)
    """Where the kubelet discovers plugins (DRA mode registers here)."""
    kubelet_plugins_dir: Path = Path(KUBELET_PLUGINS)
    """Where the DRA plugin serves its socket and keeps its checkpoint, under `akri.sh/`."""
    cdi_dir: Path = Path(CDI_DIR)
    """Where prepared devices' CDI spec files go for the container runtime."""
    log_level: Annotated[
        Literal["DEBUG", "INFO", "WARNING", "ERROR"], BeforeValidator(lambda v: str(v).upper())
    ] = "INFO"
    """DEBUG, INFO, WARNING or ERROR."""
    log_format: Literal["json", "text"] = "json"
    """json (one object per line, with the node name) or text."""

    @field_validator("rediscovery_wait")
    @classmethod
    def _within_allocate(cls, wait: float | None, info: ValidationInfo) -> float | None:
        allocate = info.data.get("allocate_timeout")
        if wait is not None and allocate is not None and wait >= allocate:
            raise ValueError(
                f"{wait:g}s is not shorter than ALLOCATE_TIMEOUT ({allocate:g}s), which bounds "
                "the whole Allocate"
            )
        return wait

    @property
    def device_wait(self) -> float:
        """The rediscovery wait in effect."""
        if self.rediscovery_wait is None:
            return self.allocate_timeout * 3 / 5
        return self.rediscovery_wait

    @property
    def debug_echo_enabled(self) -> bool:
        return self.enable_debug_echo is not None


def load_settings() -> AgentSettings:
    """The settings from the process environment; SettingsError explains what is wrong."""
    return load(AgentSettings)
