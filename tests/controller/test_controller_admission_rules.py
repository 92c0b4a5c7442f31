"""The webhook's own rules beyond parsing: udev rules held to the allowed subsystems, what a
Configuration's author must be allowed to create, and the refusal when they may not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.exceptions import ApiException

from akri.controller.admission import Access, Policy, access_needed, review
from akri.controller.webhook import decide
from tests.controller.test_controller_webhook import EXAMPLES, admission_review, configuration

CAMERAS = Policy(frozenset({"video4linux", "sound"}), frozenset({"trusted"}))


def udev(*rules: str) -> dict[str, Any]:
    return configuration("udev", yaml.safe_dump({"udevRules": list(rules)}))


@pytest.mark.parametrize(
    ("rule", "admitted"),
    [
        ('SUBSYSTEM=="video4linux", KERNEL=="video[0-9]*"', True),
        ('SUBSYSTEM=="video4linux|sound"', True),
        ('KERNEL=="video0"', False),  # no subsystem: any device named so
        ('SUBSYSTEM=="block"', False),
        ('SUBSYSTEM=="video4linux|block"', False),
        ('SUBSYSTEM=="video*"', False),  # a glob is not a subsystem name
        ('SUBSYSTEM!="block"', False),  # a negation allows everything else
        ('SUBSYSTEMS=="video4linux"', False),  # a parent's subsystem: the device may be a disk
    ],
)
def test_udev_rules_must_name_an_allowed_subsystem(rule: str, admitted: bool) -> None:
    answer = review(admission_review(udev(rule)), CAMERAS)["response"]
    assert answer["allowed"] is admitted
    if not admitted:
        assert "must match SUBSYSTEM==" in answer["status"]["message"]
        assert "one of sound, video4linux in namespace default" in answer["status"]["message"]


def test_every_rule_of_a_configuration_is_held_to_the_subsystems() -> None:
    body = udev('SUBSYSTEM=="sound"', 'KERNEL=="sda"')
    assert review(admission_review(body), CAMERAS)["response"]["allowed"] is False


def test_trusted_namespaces_and_an_empty_list_allow_any_subsystem() -> None:
    request = admission_review(udev('KERNEL=="sda"'))
    request["request"]["namespace"] = "trusted"
    assert review(request, CAMERAS)["response"]["allowed"] is True
    assert review(admission_review(udev('KERNEL=="sda"')), Policy())["response"]["allowed"]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_every_shipped_example_is_admitted_under_the_charts_subsystems(path: Path) -> None:
    values = yaml.safe_load((Path(__file__).parents[2] / "helm/akri/values.yaml").read_text())
    policy = Policy(frozenset(values["admission"]["udev"]["subsystems"]))
    answer = review(admission_review(yaml.safe_load(path.read_text())), policy)
    assert answer["response"]["allowed"], answer


def test_access_needed_lists_what_the_controller_would_create_and_what_changed() -> None:
    pod: dict[str, Any] = {"brokerSpec": {"brokerPodSpec": {"containers": []}}}
    job: dict[str, Any] = {"brokerSpec": {"brokerJobSpec": {"template": {}}}}
    services: dict[str, Any] = {
        "instanceServiceSpec": {"ports": []},
        "configurationServiceSpec": {"ports": []},
    }
    assert access_needed({"spec": {**pod, **services}}) == [
        Access("", "pods", "brokerSpec.brokerPodSpec"),
        Access("", "services", "instanceServiceSpec and configurationServiceSpec"),
    ]
    assert access_needed({"spec": job}) == [Access("batch", "jobs", "brokerSpec.brokerJobSpec")]
    assert access_needed({"spec": {"capacity": 3, **pod}}, {"spec": {"capacity": 2, **pod}}) == []
    assert access_needed({"spec": {}}) == []


class Checks:
    """An AccessCheck answering from a table, recording what it was asked."""

    def __init__(self, allowed: dict[str, bool] | Exception) -> None:
        self.allowed = allowed
        self.asked: list[tuple[str, str, str]] = []

    async def __call__(self, user: Any, namespace: str, access: Access) -> bool:
        self.asked.append((user["username"], namespace, access.resource))
        if isinstance(self.allowed, Exception):
            raise self.allowed
        return self.allowed[access.resource]


def with_broker(user: str = "alice") -> dict[str, Any]:
    body = configuration("debugEcho", "descriptions: [a]")
    body["spec"]["brokerSpec"] = {"brokerPodSpec": {"containers": [{"name": "b"}]}}
    request = admission_review(body)
    request["request"]["userInfo"] = {"username": user, "groups": ["dev"]}
    return request


async def test_a_broker_is_admitted_only_when_its_author_may_create_it() -> None:
    allowed = Checks({"pods": True})
    assert (await decide(with_broker(), Policy(), allowed))["response"]["allowed"]
    assert allowed.asked == [("alice", "default", "pods")]
    refused = (await decide(with_broker(), Policy(), Checks({"pods": False})))["response"]
    assert refused["allowed"] is False
    assert refused["status"]["message"].startswith(
        'user "alice" may not create pods in namespace default, which the controller would '
        "create for brokerSpec.brokerPodSpec"
    )


async def test_an_access_check_that_fails_refuses() -> None:
    answer = await decide(with_broker(), Policy(), Checks(ApiException(status=503)))
    assert answer["response"]["allowed"] is False
    assert (
        "cannot check whether the user may create pods" in answer["response"]["status"]["message"]
    )


async def test_a_refused_detail_is_not_checked_further() -> None:
    checks = Checks({"pods": True})
    request = with_broker()
    request["request"]["object"]["spec"]["discoveryHandler"]["discoveryDetails"] = "x: ["
    assert (await decide(request, Policy(), checks))["response"]["allowed"] is False
    assert checks.asked == []
