"""Label and field selectors: parsing the query-string syntax and matching objects.

Pure logic. Controllers narrow their lists and watches with these (`akri.sh/instance=...`,
`spec.nodeName=...`), so a selector the emulator ignored would hide real filtering bugs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from akri.sim.apiserver.errors import ApiError, bad_request

_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
_SET_OPERATION = re.compile(r"^(?P<key>\S+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)$")
_BINARY_OPERATION = re.compile(r"^(?P<key>[^=!<>\s]+)\s*(?P<op>==|=|!=|<|>)\s*(?P<value>.*)$")


def valid_label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    return bool(_LABEL_KEY.match(key)) and len(name) <= 63 and len(prefix) <= 253


def valid_label_value(value: str) -> bool:
    return len(value) <= 63 and bool(_LABEL_VALUE.match(value))


@dataclass(frozen=True)
class Requirement:
    """One term of a label selector; `op` is one of =, !=, in, notin, exists, !exists, <, >."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "exists":
            return present
        if self.op == "!exists":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        return present and _compare_integers(value, self.op, self.values[0])


def _compare_integers(value: str, op: str, bound: str) -> bool:
    try:
        number = int(value)
    except ValueError:
        return False
    return number < int(bound) if op == "<" else number > int(bound)


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside an `in (...)` value set."""
    terms: list[str] = []
    depth = 0
    current: list[str] = []
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    terms.append("".join(current).strip())
    if depth != 0:
        raise bad_request(f"unable to parse requirement: unbalanced parentheses in {selector!r}")
    return terms


def _parse_term(term: str) -> Requirement:
    if match := _SET_OPERATION.match(term):
        values = tuple(v.strip() for v in match["values"].split(",") if v.strip())
        return _checked(Requirement(match["key"], match["op"], values))
    if match := _BINARY_OPERATION.match(term):
        op = "=" if match["op"] == "==" else match["op"]
        value = match["value"].strip()
        if op in ("<", ">") and not re.fullmatch(r"-?\d+", value):
            raise bad_request(f"unable to parse requirement: {term!r}: value must be an integer")
        return _checked(Requirement(match["key"], op, (value,)))
    if term.startswith("!"):
        return _checked(Requirement(term[1:].strip(), "!exists"))
    return _checked(Requirement(term, "exists"))


def _checked(requirement: Requirement) -> Requirement:
    if not valid_label_key(requirement.key):
        raise bad_request(f"unable to parse requirement: invalid label key {requirement.key!r}")
    if requirement.op not in ("<", ">"):
        for value in requirement.values:
            if not valid_label_value(value):
                raise bad_request(f"unable to parse requirement: invalid label value {value!r}")
    return requirement


@dataclass(frozen=True)
class LabelSelector:
    """A parsed `labelSelector`; the empty selector matches everything."""

    requirements: tuple[Requirement, ...] = ()

    @classmethod
    def parse(cls, selector: str | None) -> LabelSelector:
        if not selector or not selector.strip():
            return cls()
        return cls(tuple(_parse_term(term) for term in _split_terms(selector)))

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return all(r.matches(labels or {}) for r in self.requirements)


def _unescape(value: str) -> str:
    return re.sub(r"\\(.)", r"\1", value)


def _split_unescaped(text: str, separator: str) -> list[str]:
    return re.split(rf"(?<!\\){re.escape(separator)}", text)


@dataclass(frozen=True)
class FieldTerm:
    field: str
    negated: bool
    value: str


FieldGetter = Callable[[Mapping[str, Any]], str]


@dataclass(frozen=True)
class FieldSelector:
    """A parsed `fieldSelector`: equality terms on the fields a kind supports."""

    terms: tuple[FieldTerm, ...] = ()

    @classmethod
    def parse(cls, selector: str | None) -> FieldSelector:
        if not selector or not selector.strip():
            return cls()
        terms = []
        for raw in _split_unescaped(selector, ","):
            term = raw.strip()
            for op in ("!=", "==", "="):
                field, found, value = term.partition(op)
                if found:
                    terms.append(FieldTerm(field.strip(), op == "!=", _unescape(value.strip())))
                    break
            else:
                raise bad_request(f"invalid selector: {term!r}; can't understand {term!r}")
        return cls(tuple(terms))

    def check_supported(self, supported: Mapping[str, FieldGetter], kind: str) -> None:
        """Reject fields the kind does not index, as a real server does (400)."""
        for term in self.terms:
            if term.field not in supported:
                raise ApiError(
                    400,
                    "BadRequest",
                    f'"{term.field}" is not a known field selector: only '
                    f'"{", ".join(sorted(supported))}" are supported for {kind}',
                )

    def matches(self, obj: Mapping[str, Any], supported: Mapping[str, FieldGetter]) -> bool:
        for term in self.terms:
            equal = supported[term.field](obj) == term.value
            if equal == term.negated:
                return False
        return True


def field_path(path: str) -> FieldGetter:
    """A getter for a dotted field, rendered as a real server renders selectable fields."""
    parts = path.split(".")

    def get(obj: Mapping[str, Any]) -> str:
        value: Any = obj
        for part in parts:
            value = value.get(part) if isinstance(value, Mapping) else None
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return get
