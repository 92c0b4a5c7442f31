"""Which of the controller's work the API refuses, per Configuration (pure bookkeeping).

A write the API refuses as it is (`akri.kube.calls.REFUSALS`: a 422 for an invalid object, a
403 from RBAC, a webhook's 400) fails the same way however often it is retried, so it must not
stay a line in a log: the Configuration it was for gets a ControllerWriteRefused condition and
an Event, and both go when that work succeeds again (the spec, RBAC or the cluster changed).
Work is tracked by its work key, so a success of one key clears that key's refusal only.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
ConfigurationKey = tuple[str, str]
"""(namespace, name) of a Configuration."""


@dataclass
class Refusals(Generic[K]):
    """The current refusal of each work key, and the Configuration it concerns."""

    _refused: dict[K, tuple[ConfigurationKey, str]] = field(default_factory=dict)

    def note(self, key: K, configuration: ConfigurationKey | None, message: str | None) -> bool:
        """Record how `key`'s work for `configuration` went (`message`: the API's refusal,
        None: done); whether the Configuration's refusal changed by it. A key whose work
        succeeds is cleared whatever Configuration it was refused for."""
        before = self._refused.get(key)
        if message is None or configuration is None:
            self._refused.pop(key, None)
        else:
            self._refused[key] = (configuration, message)
        return self._refused.get(key) != before

    def configuration_of(self, key: K) -> ConfigurationKey | None:
        """The Configuration `key`'s refusal concerns, while it has one."""
        found = self._refused.get(key)
        return None if found is None else found[0]

    def message(self, configuration: ConfigurationKey) -> str | None:
        """Every refusal for `configuration`, one per different message; None when none."""
        messages = sorted({m for c, m in self._refused.values() if c == configuration})
        return "; ".join(messages) or None

    def forget(self, configuration: ConfigurationKey) -> None:
        """Drop the refusals of a deleted Configuration."""
        self._refused = {k: v for k, v in self._refused.items() if v[0] != configuration}
