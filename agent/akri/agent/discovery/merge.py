"""Pure: combine what several endpoints of one handler report into one device list and status."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from akri.api import ConditionType
from akri.discovery.model import Device, Status


def merge(lists: Iterable[Sequence[Device]]) -> list[Device]:
    """One device per id, sorted by id; when several lists name an id, the first list wins.

    Several nodes' handlers (or one handler registered twice) report the same camera; it is
    one device and must become one Instance.
    """
    by_id: dict[str, Device] = {}
    for devices in lists:
        for device in devices:
            by_id.setdefault(device.id, device)
    return [by_id[key] for key in sorted(by_id)]


def summarise(handler: str, endpoints: Mapping[str, Status | None]) -> Status | None:
    """The status of a Configuration from its endpoints' (None: still connecting).

    Invalid details win (no endpoint can help), then a refused host path (a device left out,
    however many endpoints work), then any working endpoint makes it READY; None means nothing
    new can be said yet.
    """
    if not endpoints:
        return Status(
            ConditionType.HANDLER_UNAVAILABLE,
            f"no discovery handler named {handler!r} is registered on this node",
        )
    known = [endpoints[key] for key in sorted(endpoints) if endpoints[key] is not None]
    for wanted in (
        ConditionType.INVALID_DETAILS,
        ConditionType.REFUSED_HOST_PATH,
        ConditionType.READY,
    ):
        found = next((s for s in known if s is not None and s.condition is wanted), None)
        if found is not None:
            return found
    return known[0] if known else None
