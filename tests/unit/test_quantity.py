"""Resource quantities in Pod specs: parsed and checked as kube-apiserver does."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from akri.sim.quantity import QuantityError, canonical, count, parse, pod_problems


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        ("1", 1),
        ("0", 0),
        ("+2", 2),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("500m", Fraction(1, 2)),
        ("2k", 2000),
        ("1Ki", 1024),
        ("3Gi", 3 * 2**30),
        ("1e3", 1000),
        ("5E-1", Fraction(1, 2)),
        ("-1", -1),
        (2, 2),
        (1.5, Fraction(3, 2)),
    ],
)
def test_parse(text: str, amount: Fraction) -> None:
    assert parse(text) == amount


@pytest.mark.parametrize("text", ["abc", "", "1x", "1.2.3", "1 ", "Ki", "1KiB", True, None, [1]])
def test_parse_refuses_what_the_server_cannot_decode(text: Any) -> None:
    with pytest.raises(QuantityError, match="quantities must match the regular expression"):
        parse(text)


def test_count_and_canonical() -> None:
    assert count("2") == 2
    assert canonical(Fraction(3, 2)) == "1500m"
    assert canonical(Fraction(-1)) == "-1"


def pod(*containers: dict[str, Any], init: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {"spec": {"containers": list(containers), "initContainers": list(init)}}


def limits(**values: Any) -> dict[str, Any]:
    return {
        "name": "c",
        "resources": {"limits": {k.replace("_", "/"): v for k, v in values.items()}},
    }


def test_good_quantities_have_no_problem() -> None:
    assert pod_problems(pod(limits(akri_sh=2), limits(akri_sh="0"))) == []
    assert pod_problems(pod({"name": "c", "resources": {"limits": {"cpu": "1.5"}}})) == []
    assert pod_problems({"spec": {"containers": "not a list"}}) == []


def test_negative_and_fractional_device_counts_are_invalid() -> None:
    assert pod_problems(pod(limits(akri_sh="-1"), limits(akri_sh="1.5"))) == [
        (
            "spec.containers[0].resources.limits[akri/sh]",
            'Invalid value: "-1": must be greater than or equal to 0',
        ),
        (
            "spec.containers[1].resources.limits[akri/sh]",
            'Invalid value: "1500m": must be an integer',
        ),
    ]


def test_a_device_request_needs_an_equal_limit() -> None:
    alone = {"name": "c", "resources": {"requests": {"akri.sh/x": "1"}}}
    unequal = {
        "name": "c",
        "resources": {"requests": {"akri.sh/x": "1"}, "limits": {"akri.sh/x": 2}},
    }
    assert pod_problems(pod(init=(alone,))) == [
        (
            "spec.initContainers[0].resources.limits",
            "Required value: Limit must be set for non overcommitable resources",
        )
    ]
    assert pod_problems(pod(unequal)) == [
        (
            "spec.containers[0].resources.requests",
            'Invalid value: "1": must be equal to akri.sh/x limit of 2',
        )
    ]


def test_an_undecodable_quantity_raises() -> None:
    with pytest.raises(QuantityError):
        pod_problems(pod(limits(akri_sh="abc")))
