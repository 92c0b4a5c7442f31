"""API calls that return plain JSON dicts, the shape the caches and builders work on.

kubernetes-asyncio would otherwise build (and the controller take apart again) a typed model
per object; for thousands of broker Pods that is most of the client's time. With
`_preload_content=False` the client no longer raises on an error status, so this does (the
reflector relies on it: a Status read as an empty list would delete every object it knows).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from kubernetes_asyncio.client.exceptions import ApiException

from akri.refusal_codes import REFUSALS

Object = dict[str, Any]


async def call(method: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Object:
    """`method(*args, **kwargs)`'s JSON answer; raises ApiException on an error status."""
    response = await method(*args, _preload_content=False, **kwargs)
    async with response:
        body = await response.read()
        if not 200 <= response.status <= 299:
            error = ApiException(status=response.status, reason=response.reason)
            error.body = body.decode(errors="replace")
            raise error
    answer: Object = json.loads(body) if body else {}
    return answer


def is_refusal(error: BaseException) -> bool:
    """Whether `error` is the API refusing a request as it is (`REFUSALS`)."""
    return isinstance(error, ApiException) and error.status in REFUSALS


def error_message(error: ApiException) -> str:
    """The API server's own explanation (its Status message), else the HTTP reason."""
    try:
        status = json.loads(error.body or "")
    except ValueError:
        status = None
    if isinstance(status, dict) and status.get("message"):
        return str(status["message"])
    return f"{error.status} {error.reason}"


def describe(error: BaseException) -> str:
    """One line for a log: the API's explanation, or the error's type and text (a timeout's
    text is empty, so its type is what tells)."""
    if isinstance(error, ApiException):
        return _one_line(f"API error {error.status}: {error_message(error)}")
    text = _one_line(str(error))
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
