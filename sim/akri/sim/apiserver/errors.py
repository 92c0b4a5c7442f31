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


# A cause's reason is named by how its message starts (field.ErrorType.String() in
# k8s.io/apimachinery/pkg/util/validation/field/errors.go).
_CAUSE_REASONS = (
    ("Required value", "FieldValueRequired"),
    ("Forbidden", "FieldValueForbidden"),
    ("Duplicate value", "FieldValueDuplicate"),
    ("Unsupported value", "FieldValueNotSupported"),
    ("Not found", "FieldValueNotFound"),
    ("Too long", "FieldValueTooLong"),
    ("Too many", "FieldValueTooMany"),
    ("Internal error", "InternalError"),
)


def cause_reason(message: str) -> str:
    """The `details.causes[].reason` of a field error, from its message."""
    return next(
        (r for prefix, r in _CAUSE_REASONS if message.startswith(prefix)), "FieldValueInvalid"
    )


def invalid(group: str, kind: str, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 with one cause per (field, message), as validation failures are reported: the
    message lists them as an aggregate does (one alone, several in brackets), without repeats
    (field.ErrorList.ToAggregate, apierrors.NewInvalid)."""
    unique = list(dict.fromkeys(causes))
    listed = [f"{field}: {message}" for field, message in unique]
    summary = listed[0] if len(listed) == 1 else f"[{', '.join(listed)}]"
    details = _details(group, kind, name)
    details["causes"] = [
        {"reason": cause_reason(message), "message": message, "field": field}
        for field, message in unique
    ]
    return ApiError(
        422, "Invalid", f'{_qualified(group, kind)} "{name}" is invalid: {summary}', details
    )


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def missing_kind(kind: str, raw: bytes) -> ApiError:
    """A body the server cannot decode for want of `kind`, quoted in full and then summarised
    to 30 bytes (transformDecodeError and summarizeData in
    k8s.io/apiserver/pkg/endpoints/handlers/create.go, runtime.NewMissingKindErr)."""
    text = raw.decode(errors="replace")
    summary = text if len(raw) <= 30 else raw[:30].decode(errors="replace") + " ..."
    return bad_request(
        f"the object provided is unrecognized (must be of type {kind}): "
        f"Object 'Kind' is missing in '{text}' ({summary})"
    )


def other_api_version(given: str, expected: str) -> ApiError:
    return bad_request(
        f"the API version in the data ({given}) does not match the expected API version "
        f"({expected})"
    )


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
