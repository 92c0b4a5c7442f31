"""discoveryProperties resolution rules (docs/design.md §3), pure."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from akri.agent.discovery.kube_properties import resolve_properties
from akri.api import ConditionType, DiscoveryProperty
from akri.discovery.model import InvalidProperties
from akri.discovery.properties import (
    Source,
    Values,
    config_map_values,
    resolve,
    secret_values,
    sources,
)

NS = "cfg-ns"


def prop(name: str, **spec: Any) -> DiscoveryProperty:
    """As the agent gets it: parsed from the Configuration's camelCase JSON."""
    return DiscoveryProperty.model_validate({"name": name, **spec})


def secret_ref(name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key, **extra}}}


def config_map_ref(name: str, key: str, **extra: Any) -> dict[str, Any]:
    return {"valueFrom": {"configMapKeyRef": {"name": name, "key": key, **extra}}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


SECRET = Source("Secret", NS, "creds")
CONFIG_MAP = Source("ConfigMap", NS, "settings")


def test_plain_values_need_no_objects() -> None:
    props = [prop("A", value="x"), prop("B", value="")]
    assert sources(props, NS) == []
    assert resolve(props, NS, {}) == {"A": b"x", "B": b""}


def test_secret_key_in_the_configurations_namespace_by_default() -> None:
    props = [prop("USER", **secret_ref("creds", "user"))]
    assert sources(props, NS) == [SECRET]
    assert resolve(props, NS, {SECRET: {"user": b"admin"}}) == {"USER": b"admin"}


def test_the_configurations_own_namespace_may_be_named() -> None:
    props = [prop("P", **config_map_ref("settings", "k", namespace=NS))]
    assert sources(props, NS) == [CONFIG_MAP]
    assert resolve(props, NS, {CONFIG_MAP: {"k": b"v"}}) == {"P": b"v"}


def test_another_namespace_is_refused_before_anything_is_read() -> None:
    props = [prop("P", **config_map_ref("settings", "k", namespace="other"))]
    refusal = f"'P': a ConfigMap of namespace 'other' refused: .* own namespace \\('{NS}'\\) only"
    with pytest.raises(InvalidProperties, match=refusal):
        sources(props, NS)
    with pytest.raises(InvalidProperties, match=refusal):
        resolve(props, NS, {Source("ConfigMap", "other", "settings"): {"k": b"v"}})


def test_each_source_is_read_once() -> None:
    props = [prop("A", **secret_ref("creds", "a")), prop("B", **secret_ref("creds", "b"))]
    assert sources(props, NS) == [SECRET]


def test_secret_data_is_base64() -> None:
    assert secret_values(SECRET, {"k": b64(b"\x00\xffbin")}) == {"k": b"\x00\xffbin"}
    assert secret_values(SECRET, None) == {}


def test_secret_data_that_is_not_base64_is_an_error_naming_the_secret() -> None:
    with pytest.raises(InvalidProperties, match="Secret cfg-ns/creds has data that is not base64"):
        secret_values(SECRET, {"k": "not base64!"})


def test_config_map_data_then_binary_data() -> None:
    values = config_map_values(CONFIG_MAP, {"a": "text"}, {"a": b64(b"bin"), "b": b64(b"\x01")})
    assert values == {"a": b"text", "b": b"\x01"}
    assert config_map_values(CONFIG_MAP, None, None) == {}


@pytest.mark.parametrize(
    ("objects", "message"),
    [
        ({SECRET: None}, "discovery property 'USER': Secret cfg-ns/creds not found"),
        ({SECRET: {}}, "discovery property 'USER': key 'user' in Secret cfg-ns/creds not found"),
    ],
)
def test_missing_and_not_optional_names_property_and_source(
    objects: dict[Source, Values | None], message: str
) -> None:
    with pytest.raises(InvalidProperties) as caught:
        resolve([prop("USER", **secret_ref("creds", "user"))], NS, objects)
    assert str(caught.value) == message
    assert caught.value.status.condition is ConditionType.INVALID_PROPERTIES


@pytest.mark.parametrize("objects", [{CONFIG_MAP: None}, {CONFIG_MAP: {"other": b"x"}}])
def test_missing_and_optional_is_skipped(objects: dict[Source, Values | None]) -> None:
    props = [prop("OPT", **config_map_ref("settings", "k", optional=True)), prop("V", value="1")]
    assert resolve(props, NS, objects) == {"V": b"1"}


async def test_resolve_properties_reads_each_source_once() -> None:
    reads: list[Source] = []

    async def read(source: Source) -> Values | None:
        reads.append(source)
        return {"user": b"admin", "pass": b"pw"} if source == SECRET else None

    props = [
        prop("USER", **secret_ref("creds", "user")),
        prop("PASS", **secret_ref("creds", "pass")),
        prop("OPT", **config_map_ref("settings", "k", optional=True)),
    ]
    assert await resolve_properties(props, NS, read) == {"USER": b"admin", "PASS": b"pw"}
    assert sorted(reads) == [CONFIG_MAP, SECRET]
