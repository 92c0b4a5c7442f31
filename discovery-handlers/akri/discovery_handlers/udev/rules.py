"""Pure: the subset of udev rule syntax the udev handler accepts, and matching devices against it.

A rule is a comma-separated list of match keys, all of which must hold: `KEY=="glob"` or
`KEY!="glob"`, with `ATTR{name}` and `ENV{name}` taking a name. Globs are udev's: `*`, `?`,
`[a-z]`, `[!x]` (or `[^x]`) and `|` between alternatives. A missing attribute or property reads
as "". The plural keys (ATTRS, DRIVERS, KERNELS, SUBSYSTEMS, TAGS) walk up from the device, and
as in udev all of them must hold on one and the same device of that chain. Action keys and
assignments (`NAME=`, `RUN+=`, `MODE:=`, ...) would silently do nothing here, so they are refused.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal, Protocol

Operator = Literal["==", "!="]

SELF_KEYS = frozenset({"ATTR", "DEVPATH", "DRIVER", "ENV", "KERNEL", "SUBSYSTEM", "TAG"})
PARENT_KEYS = frozenset({"ATTRS", "DRIVERS", "KERNELS", "SUBSYSTEMS", "TAGS"})
NAMED_KEYS = frozenset({"ATTR", "ATTRS", "ENV"})
_OPERATORS: dict[str, Operator] = {"==": "==", "!=": "!="}
_SUPPORTED = ", ".join(sorted(SELF_KEYS | PARENT_KEYS))

_TERM = re.compile(
    r"\s*(?P<key>[A-Za-z_]+)(?:\{(?P<name>[^{}]*)\})?\s*"
    r"(?P<op>==|!=|\+=|-=|:=|=)\s*"
    r'"(?P<value>(?:[^"\\]|\\.)*)"\s*'
)
_ESCAPE = re.compile(r"\\(.)")


class Node(Protocol):
    """What matching needs to know about a device; sysfs reads stay lazy."""

    @property
    def devpath(self) -> str: ...
    @property
    def kernel(self) -> str: ...
    @property
    def subsystem(self) -> str | None: ...
    @property
    def driver(self) -> str | None: ...
    @property
    def tags(self) -> Collection[str]: ...
    @property
    def parent(self) -> Node | None: ...
    def attribute(self, name: str) -> str | None: ...
    def env(self, name: str) -> str | None: ...


@dataclass(frozen=True)
class Match:
    """One `KEY{name}OP"pattern"` term."""

    key: str
    name: str | None
    op: Operator
    pattern: str

    def holds_on(self, node: Node) -> bool:
        found = any(glob_matches(self.pattern, value) for value in values_of(self, node))
        return found if self.op == "==" else not found


@dataclass(frozen=True)
class Rule:
    """A conjunction of matches; the text is kept for messages."""

    text: str
    matches: tuple[Match, ...]

    def matches_node(self, node: Node) -> bool:
        own = [m for m in self.matches if m.key in SELF_KEYS]
        inherited = [m for m in self.matches if m.key in PARENT_KEYS]
        if not all(m.holds_on(node) for m in own):
            return False
        return not inherited or any(
            all(m.holds_on(ancestor) for m in inherited) for ancestor in lineage(node)
        )


class RuleError(ValueError):
    """The rule cannot be used; the text says which key or column and why."""


def parse_rule(text: str) -> Rule:
    """The rule in `text`, or RuleError naming the offending key."""
    if not text.strip():
        raise RuleError("a udev rule must have at least one match key")
    matches: list[Match] = []
    position = 0
    while True:
        term = _TERM.match(text, position)
        if term is None:
            raise RuleError(
                f'cannot parse udev rule {text!r} at column {position + 1}: expected KEY=="value"'
            )
        matches.append(_match(term))
        position = term.end()
        if position == len(text):
            return Rule(text, tuple(matches))
        if text[position] != ",":
            raise RuleError(f"expected ',' at column {position + 1} of udev rule {text!r}")
        position += 1


def _match(term: re.Match[str]) -> Match:
    key, name, op = term["key"], term["name"], term["op"]
    if key not in SELF_KEYS | PARENT_KEYS:
        raise RuleError(f"unsupported udev key {key} (the match keys are {_SUPPORTED})")
    operator = _OPERATORS.get(op)
    if operator is None:
        raise RuleError(f"{key}{op} is an assignment; only == and != matches are supported")
    if (name is not None) != (key in NAMED_KEYS):
        usage = f"{key}{{name}}" if key in NAMED_KEYS else key
        raise RuleError(f"udev key {key} is written {usage}")
    if name is not None and not name:
        raise RuleError(f"udev key {key}{{}} needs a name in the braces")
    return Match(key, name, operator, _ESCAPE.sub(r"\1", term["value"]))


def values_of(match: Match, node: Node) -> Iterator[str]:
    """The value(s) a key reads on `node`; tags are several, everything else one."""
    key = match.key.removesuffix("S") if match.key in PARENT_KEYS else match.key
    if key == "TAG":
        yield from node.tags
        return
    value: str | None
    if key == "ATTR":  # compared without trailing newline and blanks, as udev does
        value = (node.attribute(match.name or "") or "").rstrip()
    elif key == "ENV":
        value = node.env(match.name or "")
    else:
        value = {
            "DEVPATH": node.devpath,
            "DRIVER": node.driver,
            "KERNEL": node.kernel,
            "SUBSYSTEM": node.subsystem,
        }[key]
    yield value or ""


def glob_matches(pattern: str, value: str) -> bool:
    """udev's glob: alternatives separated by |, `[^...]` as a synonym of `[!...]`."""
    return any(fnmatchcase(value, alt.replace("[^", "[!")) for alt in pattern.split("|"))


def lineage(node: Node) -> Iterator[Node]:
    """The device, then its parents up to the root."""
    current: Node | None = node
    while current is not None:
        yield current
        current = current.parent


def matches_any(rules: Collection[Rule], node: Node) -> bool:
    return any(rule.matches_node(node) for rule in rules)
