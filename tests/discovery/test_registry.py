"""HandlerRegistry: keyed by name and endpoint, replacement, guarded removal, notification."""

from __future__ import annotations

from akri.agent.discovery.registry import EMBEDDED, HandlerRegistry
from tests.discovery.scripted import Scripted


async def test_one_name_many_endpoints_and_replacement() -> None:
    registry = HandlerRegistry()
    first, second, again = Scripted("h"), Scripted("h"), Scripted("h")
    registry.add(first)
    registry.add(second, "/a.sock")
    assert registry.handlers("h") == {EMBEDDED: first, "/a.sock": second}
    registry.add(again, "/a.sock")
    assert registry.handlers("h") == {EMBEDDED: first, "/a.sock": again}
    assert registry.names() == {"h"}
    assert registry.handlers("other") == {}


async def test_removal_only_of_the_handler_still_registered() -> None:
    registry = HandlerRegistry()
    old, new = Scripted("h"), Scripted("h")
    registry.add(old, "/a.sock")
    registry.add(new, "/a.sock")
    assert not registry.remove("h", "/a.sock", old)
    assert registry.handlers("h") == {"/a.sock": new}
    assert registry.remove("h", "/a.sock", new)
    assert registry.names() == set()


async def test_every_change_sets_the_event_taken_before_it() -> None:
    registry = HandlerRegistry()
    handler = Scripted("h")
    before_add = registry.changed()
    registry.add(handler)
    assert before_add.is_set()
    before_remove = registry.changed()
    assert not before_remove.is_set()
    registry.remove("h", EMBEDDED, Scripted("h"))  # not registered: no change
    assert not before_remove.is_set()
    registry.remove("h", EMBEDDED, handler)
    assert before_remove.is_set()
