"""API errors carried as exceptions and rendered as `Status` bodies.

Clients (kubernetes-asyncio, kubectl) branch on `code` and `reason`, so every failure the
emulator reports goes through one place that shapes it the way a real API server does.
"""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]


class ApiError(Exception):
    """A failed request; `status` is the wire body, `code` the HTTP status."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: JSON | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    @property
    def status(self) -> JSON:
        body: JSON = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(group: str, kind: str, name: str) -> JSON:
    details: JSON = {"name": name, "kind": kind}
    if group:
        details["group"] = group
    return details


def _qualified(group: str, resource: str) -> str:
    return f"{resource}.{group}" if group else resource


def not_found(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        404,
        "NotFound",
        f'{_qualified(group, resource)} "{name}" not found',
        _details(group, resource, name),
    )


def already_exists(group: str, resource: str, name: str) -> ApiError:
    return ApiError(
        409,
        "AlreadyExists",
        f'{_qualified(group, resource)} "{name}" already exists',
        _details(group, resource, name),
    )


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(group, resource)} "{name}": {why}',
        _details(group, resource, name),
    )


def stale_write(group: str, resource: str, name: str) -> ApiError:
    """The optimistic-concurrency failure every read-modify-write loop must handle."""
    return conflict(
        group,
        resource,
        name,
        "the object has been modified; "
        "please apply your changes to the latest version and try again",
    )


def expired(message: str) -> ApiError:
    """410 for a resourceVersion older than the retained history (a real server says Expired)."""
    return ApiError(410, "Expired", message)


def invalid(group: str, kind: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 with one cause per (field, message), as validation failures are reported."""
    summary = ", ".join(f"{field}: {message}" for field, message in causes)
    details = _details(group, kind, name)
    details["causes"] = [
        {"reason": "FieldValueInvalid", "message": message, "field": field}
        for field, message in causes
    ]
    return ApiError(
        422, "Invalid", f'{_qualified(group, kind)} "{name}" is invalid: {summary}', details
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str) -> ApiError:
    return ApiError(403, "Forbidden", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format ({content_type}) - accepted media "
        f"types include: {', '.join(accepted)}",
    )


def too_many_requests(retry_after_s: int = 1) -> ApiError:
    return ApiError(
        429,
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
        {"retryAfterSeconds": retry_after_s},
        {"Retry-After": str(retry_after_s)},
    )


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}")


_REASONS = {
    400: "BadRequest",
    403: "Forbidden",
    404: "NotFound",
    409: "Conflict",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def by_code(code: int, message: str) -> ApiError:
    """An error for an HTTP code alone, for injected faults."""
    if code == 410:
        return expired(message)
    if code == 429:
        return too_many_requests()
    return ApiError(code, _REASONS.get(code, "InternalError"), message)
