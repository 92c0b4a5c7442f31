"""A process's command line and settings: `--help` that lists the environment, errors an
operator can act on."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from akri.durations import parse_duration

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


@dataclass(frozen=True)
class Variable:
    """An environment variable a program reads, for its `--help`."""

    name: str
    default: str
    """As an operator would write it, or what happens when it is unset."""
    meaning: str


def variables(settings: type[BaseSettings]) -> tuple[Variable, ...]:
    """The variables `settings` reads: one per field, with its default and its docstring."""
    return tuple(
        Variable(name.upper(), _default(field), field.description or "")
        for name, field in settings.model_fields.items()
    )


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if any(getattr(m, "func", None) is parse_duration for m in field.metadata):
        return f"{value:g}s"
    return str(value)


def command_line(
    prog: str,
    description: str,
    environment: Sequence[Variable] = (),
    argv: Sequence[str] | None = None,
    arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> argparse.Namespace:
    """Parse `argv`; `--help` prints usage and the environment variables, then exits 0.

    Every program calls this before it reads settings or starts anything, so asking for help
    never starts a component. `arguments` adds the program's own options and subcommands.
    """
    parser = argparse.ArgumentParser(prog=prog, **help_text(description, environment))
    if arguments is not None:
        arguments(parser)
    return parser.parse_args(argv)


def help_text(description: str, environment: Sequence[Variable]) -> dict[str, Any]:
    """Keyword arguments of an ArgumentParser (or subcommand) for `description` and variables."""
    lines = []
    if environment:
        width = max(len(variable.name) for variable in environment)
        lines.append("environment variables:")
        for variable in environment:
            lines.append(f"  {variable.name:<{width}}  {variable.meaning}".rstrip())
            lines.append(f"  {'':<{width}}  (default: {variable.default})")
    return {
        "description": description,
        "epilog": "\n".join(lines) or None,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
