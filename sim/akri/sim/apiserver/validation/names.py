"""Formats of names, keys and labels (k8s.io/apimachinery/pkg/util/validation/validation.go:
IsDNS1123Label, IsDNS1123Subdomain, IsQualifiedName, IsValidLabelValue,
IsCIdentifier, IsConfigMapKey): each returns the messages a real server gives, [] when valid."""

from __future__ import annotations

import re

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = rf"{_LABEL}(\.{_LABEL})*"
_QUALIFIED = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = rf"({_QUALIFIED})?"
_C_IDENTIFIER = "[A-Za-z_][A-Za-z0-9_]*"
_CONFIG_KEY = "[-._a-zA-Z0-9]+"

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
LABEL_VALUE_MAX = 63
QUALIFIED_NAME_MAX = 63


def _format(what: str, regex: str, *examples: str) -> str:
    shown = ",  or ".join(f"'{e}'" for e in examples)
    return f"{what} (e.g. {shown}, regex used for validation is '{regex}')"


DNS1123_LABEL_FORMAT = _format(
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character",
    _LABEL,
    "my-name",
    "123-abc",
)
DNS1123_SUBDOMAIN_FORMAT = _format(
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character",
    _SUBDOMAIN,
    "example.com",
)
_QUALIFIED_FORMAT = _format(
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character",
    _QUALIFIED,
    "MyName",
    "my.name",
    "123-abc",
)
LABEL_VALUE_FORMAT = _format(
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character",
    _LABEL_VALUE,
    "MyValue",
    "my_value",
    "12345",
)
C_IDENTIFIER_FORMAT = _format(
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_'",
    _C_IDENTIFIER,
    "my_name",
    "MY_NAME",
    "MyName",
)
CONFIG_KEY_FORMAT = _format(
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
    _CONFIG_KEY,
    "key.name",
    "KEY_NAME",
    "key-name",
)


def _full(regex: str, value: str) -> bool:
    return re.fullmatch(regex, value) is not None


def _too_long(limit: int, unit: str = "characters") -> str:
    return f"must be no more than {limit} {unit}"


def dns1123_label(value: str) -> list[str]:
    messages = [_too_long(DNS1123_LABEL_MAX)] if len(value) > DNS1123_LABEL_MAX else []
    return messages + ([] if _full(_LABEL, value) else [DNS1123_LABEL_FORMAT])


def dns1123_subdomain(value: str) -> list[str]:
    messages = [_too_long(DNS1123_SUBDOMAIN_MAX)] if len(value) > DNS1123_SUBDOMAIN_MAX else []
    return messages + ([] if _full(_SUBDOMAIN, value) else [DNS1123_SUBDOMAIN_FORMAT])


def qualified_name(value: str) -> list[str]:
    """A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain."""
    parts = value.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
    else:
        return [
            "a valid label key "
            + _QUALIFIED_FORMAT
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    messages = [f"prefix part {m}" for m in dns1123_subdomain(prefix)] if prefix else []
    if not name:
        return [*messages, "name part must be non-empty"]
    if len(name) > QUALIFIED_NAME_MAX:
        messages.append("name part " + _too_long(QUALIFIED_NAME_MAX, "bytes"))
    if not _full(_QUALIFIED, name):
        messages.append("name part " + _QUALIFIED_FORMAT)
    return messages


def label_value(value: str) -> list[str]:
    messages = [_too_long(LABEL_VALUE_MAX, "bytes")] if len(value) > LABEL_VALUE_MAX else []
    return messages + ([] if _full(_LABEL_VALUE, value) else [LABEL_VALUE_FORMAT])


def c_identifier(value: str) -> list[str]:
    return [] if _full(_C_IDENTIFIER, value) else [C_IDENTIFIER_FORMAT]


def config_key(value: str) -> list[str]:
    messages = [] if len(value) <= DNS1123_SUBDOMAIN_MAX else [_too_long(DNS1123_SUBDOMAIN_MAX)]
    if not _full(_CONFIG_KEY, value):
        messages.append(CONFIG_KEY_FORMAT)
    if value == ".":
        messages.append("must not be '.'")
    elif value == "..":
        messages.append("must not be '..'")
    elif value.startswith(".."):
        messages.append("must not start with '..'")
    return messages
