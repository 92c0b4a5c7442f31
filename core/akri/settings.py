"""A process's command line and settings: `--help` that lists the environment, errors an
operator can act on."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from akri.durations import format_duration, parse_duration

S = TypeVar("S", bound=BaseSettings)
NO_BREAK = "\xa0"
"""Keeps "(default: ...)" on one line when the help is wrapped."""


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


def parse_bool(name: str, value: str) -> bool:
    """Akri's `"true"`/`"false"` environment flags; anything else is an error, not a guess."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(f"{name} must be true or false, got {value!r}")


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
        return format_duration(value)
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
        indent = " " * (width + 4)
        # As argparse wraps its own help: to the terminal, continuation lines indented.
        columns = max(shutil.get_terminal_size().columns - 2, len(indent) + 20)
        lines.append("environment variables:")
        for variable in environment:
            default = f"(default: {variable.default})".replace(" ", NO_BREAK)
            text = f"{variable.meaning} {default}".lstrip()
            lines += textwrap.wrap(
                text,
                columns,
                initial_indent=f"  {variable.name:<{width}}  ",
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
        lines = [line.replace(NO_BREAK, " ") for line in lines]
    return {
        "description": description,
        "epilog": "\n".join(lines) or None,
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }
