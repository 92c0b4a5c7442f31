"""The Allocate response builder: env naming, one or several devices, dropped properties."""

from __future__ import annotations

from akri.agent.plugins.response import (
    CONFIGURATION,
    MAX_ENV_VALUE_BYTES,
    Dropped,
    allocate_response,
    container_env,
)
from akri.proto.deviceplugin.v1beta1.api_pb2 import DeviceSpec, Mount

A, B = "cfg-8120fe", "cfg-a19705"
PROPERTIES = {A: {"URL": "a", "MODEL": "x"}, B: {"URL": "b"}}
NO_EXTRAS = {A: ((), ()), B: ((), ())}


def env(
    instances: list[str],
    properties: dict[str, dict[str, str]] = PROPERTIES,
    configuration: dict[str, str] | None = None,
) -> tuple[dict[str, str], set[Dropped]]:
    dropped: set[Dropped] = set()
    return container_env(instances, properties, configuration or {}, dropped), dropped


def test_one_device_gets_suffixed_and_plain_names() -> None:
    assert env([A]) == (
        {"URL_8120FE": "a", "MODEL_8120FE": "x", "URL": "a", "MODEL": "x"},
        set(),
    )


def test_several_slots_of_one_instance_are_still_one_device() -> None:
    assert env([A, A])[0] == env([A])[0]


def test_several_devices_get_only_suffixed_names_and_every_device_is_there() -> None:
    assert env([A, B])[0] == {"URL_8120FE": "a", "MODEL_8120FE": "x", "URL_A19705": "b"}


def test_configuration_properties_are_plain_and_win() -> None:
    got, _ = env([A], configuration={"URL": "from-config", "SITE": "lab"})
    assert got["URL"] == "from-config"
    assert got["URL_8120FE"] == "a"
    assert got["SITE"] == "lab"
    assert env([A, B], configuration={"SITE": "lab"})[0]["SITE"] == "lab"


def test_invalid_names_and_oversized_values_are_dropped_and_reported() -> None:
    huge = "v" * (MAX_ENV_VALUE_BYTES + 1)
    properties = {A: {"OK": "1", "bad-name": "2", "1ST": "3", "BIG": huge}}
    got, dropped = env([A], properties, {"also bad": "4", "FINE": "5"})
    assert got == {"OK_8120FE": "1", "OK": "1", "FINE": "5"}
    assert {(d.owner, d.key) for d in dropped} == {
        (A, "bad-name"),
        (A, "1ST"),
        (A, "BIG"),
        (CONFIGURATION, "also bad"),
    }
    big = next(d for d in dropped if d.key == "BIG")
    assert f"{MAX_ENV_VALUE_BYTES + 1} bytes" in str(big)
    assert f"Instance {A}" in str(big)
    config = next(d for d in dropped if d.owner == CONFIGURATION)
    assert "Configuration" in str(config)
    assert "not a valid environment variable name" in str(config)


def test_a_value_at_the_limit_is_kept() -> None:
    value = "v" * MAX_ENV_VALUE_BYTES
    assert env([A], {A: {"BIG": value}}) == ({"BIG_8120FE": value, "BIG": value}, set())


def test_one_response_per_container_in_order() -> None:
    response, dropped = allocate_response([[B], [A, B], []], PROPERTIES, {"SITE": "lab"}, NO_EXTRAS)
    envs = [dict(c.envs) for c in response.container_responses]
    assert envs == [
        {"URL_A19705": "b", "URL": "b", "SITE": "lab"},
        {"URL_8120FE": "a", "MODEL_8120FE": "x", "URL_A19705": "b", "SITE": "lab"},
        {"SITE": "lab"},
    ]
    assert dropped == set()


def test_device_extras_are_merged_once_per_device() -> None:
    extras = {
        instance: (
            [Mount(container_path="/etc/shared", host_path=f"/srv/{instance}", read_only=True)],
            [DeviceSpec(container_path=f"/dev/{instance}", host_path=f"/dev/{instance}")],
        )
        for instance in (A, B)
    }

    response, _ = allocate_response([[A, A, B]], PROPERTIES, {}, extras)

    (container,) = response.container_responses
    assert [d.host_path for d in container.devices] == [f"/dev/{A}", f"/dev/{B}"]
    assert [m.host_path for m in container.mounts] == [f"/srv/{A}"]  # one path, first wins


def test_a_device_without_extras_gets_none() -> None:
    response, _ = allocate_response([[A]], PROPERTIES, {}, NO_EXTRAS)
    (container,) = response.container_responses
    assert (list(container.mounts), list(container.devices)) == ([], [])
