"""Pure: parse XML from the network without trusting it, and find elements by local name.

Cameras disagree on namespace prefixes and versions, so lookups ignore namespaces. Documents
with a DTD are refused outright: nothing ONVIF sends needs one, and entities are an attack.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


class UnsafeXml(ValueError):
    """The bytes are not XML, or declare a DTD or entities."""


def parse_xml(data: bytes) -> ET.Element:
    if _DTD.search(data):
        raise UnsafeXml("XML with a DTD or entity declaration refused")
    try:
        return ET.fromstring(data)
    except ET.ParseError as error:
        raise UnsafeXml(f"not well-formed XML: {error}") from None


def local(tag: str) -> str:
    """`{namespace}Name` -> `Name`."""
    return tag.rpartition("}")[2]


def descendants(root: ET.Element, name: str) -> Iterator[ET.Element]:
    """Every element under `root` (itself included) whose local name is `name`."""
    return (e for e in root.iter() if local(e.tag) == name)


def first(root: ET.Element, name: str) -> ET.Element | None:
    return next(descendants(root, name), None)


def text_of(root: ET.Element, name: str) -> str | None:
    """Stripped text of the first `name` element, None when absent or empty."""
    element = first(root, name)
    text = (element.text or "").strip() if element is not None else ""
    return text or None
