"""Loading a process's settings from its environment, with errors an operator can act on."""

from __future__ import annotations

from typing import TypeVar

from pydantic import ValidationError
from pydantic_settings import BaseSettings

S = TypeVar("S", bound=BaseSettings)


class SettingsError(Exception):
    """Settings a process cannot start with; the text names each variable and what is wrong."""


def load(settings: type[S]) -> S:
    """`settings` from the environment; SettingsError explains what is wrong."""
    try:
        return settings()
    except ValidationError as error:
        raise SettingsError(describe(error)) from None


def describe(error: ValidationError) -> str:
    """One line per bad variable, named as it is set (AGENT_NODE_NAME, not agent_node_name)."""
    problems = []
    for problem in error.errors():
        variable = str(problem["loc"][0]).upper() if problem["loc"] else "settings"
        reason = "is required" if problem["type"] == "missing" else str(problem["msg"])
        problems.append(f"{variable}: {reason.removeprefix('Value error, ')}")
    return "; ".join(problems)
