"""`kubectl explain` reads the kinds' schemas from OpenAPI v3, custom resources' included."""

from __future__ import annotations

import pytest

from tests.conformance.support import PLURAL
from tests.kubectl import Kubectl, needs_kubectl
from tests.support import eventually

pytestmark = needs_kubectl


@pytest.mark.parametrize(
    ("field", "shown"),
    [
        ("pods.spec.containers.image", "FIELD: image <string>"),
        ("pods.spec.containers.ports", "FIELD: ports <[]ContainerPort>"),
        ("deployments.spec.replicas", "FIELD: replicas <integer>"),
        ("configmaps.data", "FIELD: data <map[string]string>"),
    ],
)
async def test_explain_shows_a_built_in_fields_type(
    kubectl: Kubectl, field: str, shown: str
) -> None:
    assert shown in await kubectl("explain", field)


async def test_explain_shows_a_custom_resources_schema(kubectl: Kubectl, widgets: None) -> None:
    async def explained() -> str:
        code, out, _ = await kubectl.result("explain", f"{PLURAL}.spec")
        return out if code == 0 else ""

    # a real server publishes a new CRD's schema moments after it is established
    spec = await eventually(explained, "the Widget schema in OpenAPI")
    assert "color\t<string> -required-" in spec
    assert "capacity\t<integer>" in spec
    assert "FIELD: metadata <ObjectMeta>" in await kubectl("explain", f"{PLURAL}.metadata")
