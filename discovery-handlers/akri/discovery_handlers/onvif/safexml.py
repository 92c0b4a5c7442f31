"""Pure: parse XML from the network without trusting it, and find elements by local name.

Cameras disagree on namespace prefixes and versions, so lookups ignore namespaces. Documents
with a DTD are refused outright: nothing ONVIF sends needs one, and entities are an attack.
The refusal is defusedxml's, made by the parser when it meets the declaration, so it holds
in whatever encoding the bytes are (a pattern on the raw bytes misses UTF-16 and UTF-32).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

from defusedxml import DefusedXmlException
from defusedxml.ElementTree import fromstring


class UnsafeXml(ValueError):
    """The bytes are not XML, or declare a DTD or entities."""


def parse_xml(data: bytes) -> ET.Element:
    try:
        root: ET.Element = fromstring(data, forbid_dtd=True)
    except DefusedXmlException:
        raise UnsafeXml("XML with a DTD or entity declaration refused") from None
    except (ET.ParseError, ValueError, LookupError) as error:  # expat reads no UTF-32
        raise UnsafeXml(f"not well-formed XML: {error}") from None
    return root


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
