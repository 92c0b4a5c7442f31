"""The simulated resourceclaim controller's part: claims made from the templates pods name."""

from __future__ import annotations

from typing import Any

from akri.sim.dra_scheduling import POD_CLAIM_NAME_ANNOTATION, template_claims

TEMPLATE = {
    "metadata": {"name": "cam", "namespace": "default"},
    "spec": {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"devices": {"requests": [{"name": "slot"}]}},
    },
}


def pod(name: str = "p", **status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "containers": [{"name": "c"}],
            "resourceClaims": [
                {"name": "dev", "resourceClaimTemplateName": "cam"},
                {"name": "other", "resourceClaimName": "fixed"},
            ],
        },
        "status": status,
    }


def test_a_claim_is_made_from_the_template_owned_by_the_pod() -> None:
    (todo,) = template_claims([pod()], {("default", "cam"): TEMPLATE}, {})
    (claim,) = todo.create
    metadata = claim["metadata"]
    assert metadata["generateName"] == "p-dev-"
    assert metadata["ownerReferences"][0]["uid"] == "uid-p"
    assert metadata["ownerReferences"][0]["controller"] is True
    assert metadata["annotations"] == {POD_CLAIM_NAME_ANNOTATION: "dev"}
    assert metadata["labels"] == {"app": "x"}
    assert claim["spec"] == {"devices": {"requests": [{"name": "slot"}]}}


def test_long_names_keep_both_ends_within_the_limit() -> None:
    name = "a" * 40 + "z" * 40
    (todo,) = template_claims([pod(name)], {("default", "cam"): TEMPLATE}, {})
    base = todo.create[0]["metadata"]["generateName"]
    assert len(base) <= 57
    assert base.startswith("aaa")
    assert base.endswith("-dev-")


def test_a_claim_made_before_is_recorded_not_made_again() -> None:
    made = {
        "metadata": {
            "name": "p-dev-x1y2z",
            "namespace": "default",
            "annotations": {POD_CLAIM_NAME_ANNOTATION: "dev"},
            "ownerReferences": [{"uid": "uid-p", "controller": True}],
        }
    }
    (todo,) = template_claims(
        [pod()], {("default", "cam"): TEMPLATE}, {("default", "p-dev-x1y2z"): made}
    )
    assert todo.create == []
    assert todo.statuses == [{"name": "dev", "resourceClaimName": "p-dev-x1y2z"}]


def test_nothing_to_do_once_recorded_or_bound_and_waiting_without_a_template() -> None:
    recorded = pod(resourceClaimStatuses=[{"name": "dev", "resourceClaimName": "p-dev-1"}])
    bound = {**pod("q"), "spec": {**pod("q")["spec"], "nodeName": "n"}}
    assert template_claims([recorded, bound], {("default", "cam"): TEMPLATE}, {}) == []
    (todo,) = template_claims([pod()], {}, {})
    assert todo.missing == ["cam"]
    assert todo.create == []
