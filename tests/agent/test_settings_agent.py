"""Agent settings from the environment: defaults, units, and errors naming the variable."""

from __future__ import annotations

from pathlib import Path

import pytest

from akri.agent.settings import AgentSettings, load_settings
from akri.settings import SettingsError

VARIABLES = [name.upper() for name in AgentSettings.model_fields]


@pytest.fixture
def environ(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """An environment with none of the agent's variables but a node name."""
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_NODE_NAME", "node-a")
    return monkeypatch


def test_defaults(environ: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert settings.agent_node_name == "node-a"
    assert settings.akri_namespace is None
    assert settings.kubeconfig is None
    assert settings.device_plugins_dir == Path("/var/lib/kubelet/device-plugins")
    assert settings.pod_resources_socket == Path("/var/lib/kubelet/pod-resources/kubelet.sock")
    assert settings.discovery_handlers_directory == Path("/var/lib/akri")
    assert not settings.debug_echo_enabled
    assert settings.debug_echo_instances_shared
    assert settings.metrics_port == 8080
    assert (settings.offline_grace, settings.reclaim_grace) == (300.0, 20.0)
    assert (settings.reclaim_interval, settings.allocate_timeout) == (10.0, 5.0)
    assert settings.device_wait == 3.0  # three fifths of the Allocate deadline
    assert (settings.log_level, settings.log_format) == ("INFO", "json")


def test_every_variable_is_read(environ: pytest.MonkeyPatch) -> None:
    values = {
        "AKRI_NAMESPACE": "akri",
        "KUBECONFIG": __file__,
        "DEVICE_PLUGINS_DIR": "/dp",
        "POD_RESOURCES_SOCKET": "/pr/kubelet.sock",
        "DISCOVERY_HANDLERS_DIRECTORY": "/dh",
        "ENABLE_DEBUG_ECHO": "",
        "DEBUG_ECHO_INSTANCES_SHARED": "False",
        "DEBUG_ECHO_AVAILABILITY_FILE": "/tmp/avail",
        "METRICS_PORT": "0",
        "OFFLINE_GRACE": "2s",
        "RECLAIM_GRACE": "1m",
        "RECLAIM_INTERVAL": "500ms",
        "ALLOCATE_TIMEOUT": "1.5",
        "REDISCOVERY_WAIT": "1s",
        "LOG_LEVEL": "debug",
        "LOG_FORMAT": "text",
    }
    for name, value in values.items():
        environ.setenv(name, value)
    settings = load_settings()
    assert settings.akri_namespace == "akri"
    assert settings.kubeconfig == Path(__file__)
    assert settings.device_plugins_dir == Path("/dp")
    assert settings.pod_resources_socket == Path("/pr/kubelet.sock")
    assert settings.discovery_handlers_directory == Path("/dh")
    assert settings.debug_echo_enabled  # any value, even empty, as in Akri
    assert not settings.debug_echo_instances_shared
    assert settings.debug_echo_availability_file == Path("/tmp/avail")
    assert settings.metrics_port == 0
    assert settings.offline_grace == 2.0
    assert settings.reclaim_grace == 60.0
    assert settings.reclaim_interval == 0.5
    assert settings.allocate_timeout == 1.5
    assert settings.device_wait == 1.0
    assert (settings.log_level, settings.log_format) == ("DEBUG", "text")


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("AGENT_NODE_NAME", "Node_A", "is not a Kubernetes node name"),
        ("AGENT_NODE_NAME", "", "is not a Kubernetes node name"),
        ("AGENT_NODE_NAME", "a" * 254, "is not a Kubernetes node name"),
        ("OFFLINE_GRACE", "5 minutes", "is not a duration"),
        ("KUBECONFIG", "/nonexistent/kubeconfig", "Path does not point to a file"),
        ("RECLAIM_GRACE", "0s", "greater than 0"),
        ("REDISCOVERY_WAIT", "5s", "is not shorter than ALLOCATE_TIMEOUT (5s)"),
        ("METRICS_PORT", "70000", "less than or equal to 65535"),
        ("METRICS_PORT", "http", "valid integer"),
        ("DEBUG_ECHO_INSTANCES_SHARED", "yes", "must be true or false"),
        ("LOG_FORMAT", "xml", "'json' or 'text'"),
        ("LOG_LEVEL", "LOUD", "'DEBUG', 'INFO', 'WARNING' or 'ERROR'"),
    ],
)
def test_bad_values_name_the_variable(
    environ: pytest.MonkeyPatch, variable: str, value: str, reason: str
) -> None:
    environ.setenv(variable, value)
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).startswith(f"{variable}: ")
    assert reason in str(raised.value)


def test_a_missing_node_name_is_required(environ: pytest.MonkeyPatch) -> None:
    environ.delenv("AGENT_NODE_NAME")
    environ.setenv("OFFLINE_GRACE", "soon")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value).split("; ") == [
        "AGENT_NODE_NAME: is required",
        "OFFLINE_GRACE: 'soon' is not a duration (use e.g. 300s, 5m, 1.5s, 250ms or plain seconds)",
    ]


@pytest.mark.parametrize("variable", ["DEVICE_PLUGINS_DIR", "DISCOVERY_HANDLERS_DIRECTORY"])
def test_a_socket_directory_others_may_write_is_refused(
    environ: pytest.MonkeyPatch, tmp_path: Path, variable: str
) -> None:
    directory = tmp_path / "sockets"
    directory.mkdir()
    directory.chmod(0o1777)  # like /tmp: the sticky bit keeps files, not the names free
    environ.setenv(variable, str(directory))
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value) == (
        f"{variable}: {directory} is writable by every user (mode drwxrwxrwt): "
        "they could replace the sockets or files kept there; allow writes by its owner only "
        "(chmod go-w)"
    )
    directory.chmod(0o775)
    with pytest.raises(SettingsError, match="is writable by its group"):
        load_settings()
    directory.chmod(0o755)
    assert load_settings()
