"""Pure: which API answers refuse a write as it is, for the agent and the controller alike."""

from __future__ import annotations

REFUSALS = frozenset({400, 401, 403, 413, 422})
"""API answers that refuse a write as it is: retrying cannot help until someone changes
something (RBAC, a webhook, a quota, the object itself). Conflicts, throttling, server errors
and timeouts are not: retrying is the cure for them."""
