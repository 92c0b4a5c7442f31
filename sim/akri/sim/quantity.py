"""Resource quantities as the API server reads and checks them in Pod specs (pure).

A quantity that does not parse cannot be decoded at all: the server answers 400 BadRequest
before validation. A parsed one is then validated with the Pod (422 Invalid): never negative,
whole for extended resources (devices cannot be split), and for extended resources a request
needs a limit equal to it. Both are worded as kube-apiserver words them, and once a Pod is
stored its quantities are known to be good, so the scheduler and the kubelet emulator can
count them without a care.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from akri.sim.resource_names import is_extended_resource_name

PATTERN = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
"""The expression kube-apiserver quotes when a quantity does not parse."""

_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE](?P<exponent>[+-]?[0-9]+))?$"
)
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_SUFFIXES: dict[str | None, Fraction] = {
    None: Fraction(1),
    **{suffix: Fraction(10) ** power for suffix, power in _DECIMAL.items()},
    **{f"{suffix}i": Fraction(2) ** (10 * n) for n, suffix in enumerate("KMGTPE", 1)},
}


class QuantityError(ValueError):
    """The text kube-apiserver gives for a quantity it cannot decode."""

    def __init__(self) -> None:
        super().__init__(f"quantities must match the regular expression '{PATTERN}'")


def parse(value: object) -> Fraction:
    """The amount a quantity (a string, or a JSON number) stands for."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise QuantityError()
    match = _QUANTITY.match(str(value))
    if match is None:
        raise QuantityError()
    amount = Fraction(match["number"])
    if match["exponent"] is not None:
        return amount * Fraction(10) ** int(match["exponent"])
    return amount * _SUFFIXES[match["suffix"]]


def count(value: object) -> int:
    """A device count from a stored (validated, so whole) quantity."""
    return int(parse(value))


def canonical(amount: Fraction) -> str:
    """How the server prints an amount in a message: whole, or in thousandths (`1500m`)."""
    if amount.denominator == 1:
        return str(amount.numerator)
    milli = amount * 1000
    return f"{int(milli)}m" if milli.denominator == 1 else str(float(amount))


Problem = tuple[str, str]
"""(field path, message), as one cause of a 422."""


def pod_problems(pod: Mapping[str, Any]) -> list[Problem]:
    """Why the Pod's resource quantities are invalid; QuantityError when one does not parse
    (the server cannot decode such a Pod at all)."""
    problems: list[Problem] = []
    for path, resources in _containers(pod):
        limits, requests = _map(resources.get("limits")), _map(resources.get("requests"))
        for kind, values in (("limits", limits), ("requests", requests)):
            for name, value in values.items():
                where = f"{path}.resources.{kind}[{name}]"
                amount = parse(value)
                if amount < 0:
                    problems.append(
                        (
                            where,
                            f'Invalid value: "{canonical(amount)}": '
                            "must be greater than or equal to 0",
                        )
                    )
                if is_extended_resource_name(name) and amount.denominator != 1:
                    problems.append(
                        (where, f'Invalid value: "{canonical(amount)}": must be an integer')
                    )
        for name, value in requests.items():
            if not is_extended_resource_name(name):
                continue
            if name not in limits:
                problems.append(
                    (
                        f"{path}.resources.limits",
                        "Required value: Limit must be set for non overcommitable resources",
                    )
                )
            elif parse(value) != parse(limits[name]):
                requested, limit = canonical(parse(value)), canonical(parse(limits[name]))
                problems.append(
                    (
                        f"{path}.resources.requests",
                        f'Invalid value: "{requested}": must be equal to {name} limit of {limit}',
                    )
                )
    return problems


def _containers(pod: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    spec = _map(pod.get("spec"))
    found = []
    for kind in ("initContainers", "containers"):
        entries = spec.get(kind)
        for index, container in enumerate(entries if isinstance(entries, list) else []):
            resources = _map(container.get("resources")) if isinstance(container, dict) else {}
            found.append((f"spec.{kind}[{index}]", resources))
    return found


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}
