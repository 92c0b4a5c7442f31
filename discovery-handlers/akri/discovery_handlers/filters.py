"""Akri's Include/Exclude filter lists, shared by every handler that filters what it finds.

Semantics (Akri's, for ONVIF): no filter, or Exclude with no items, admits everything; a value
that could not be learnt is refused by any other filter; Include admits when some item matches
some value, Exclude refuses when some item matches some value. How an item matches a value
(exact, case-insensitive, regex) is the caller's choice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

T = TypeVar("T")
Value = TypeVar("Value")


class FilterList(BaseModel, Generic[T]):
    """`{items: [...], action: Include|Exclude}`; the action defaults to Include as in Akri."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    items: list[T]
    action: Literal["Include", "Exclude"] = "Include"

    @property
    def trivial(self) -> bool:
        """Admits everything, even unknown values."""
        return self.action == "Exclude" and not self.items


def admits(
    filter_list: FilterList[T] | None,
    values: Collection[Value] | None,
    matches: Callable[[T, Value], bool],
) -> bool:
    """Whether a device with `values` (None: unknown) passes; `matches(item, value)`."""
    if filter_list is None or filter_list.trivial:
        return True
    if values is None:
        return False
    hit = any(matches(item, value) for item in filter_list.items for value in values)
    return hit if filter_list.action == "Include" else not hit


def same_text(item: str, value: str) -> bool:
    """Case-insensitive equality, Akri's comparison for addresses, scopes and uuids."""
    return item.casefold() == value.casefold()


def found(item: re.Pattern[str], value: str) -> bool:
    """`item` matches somewhere in `value`; users anchor with ^ and $ when they mean it."""
    return item.search(value) is not None
