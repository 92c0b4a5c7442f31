"""One line per failed API call in the logs: the API's own message, or what kind of error it was."""

from __future__ import annotations

import json

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from akri.kube.calls import describe


def api_error(status: int, reason: str, message: str | None) -> ApiException:
    error = ApiException(status=status, reason=reason)
    error.body = json.dumps({"kind": "Status", "message": message}).encode() if message else b""
    return error


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (
            api_error(422, "Unprocessable Entity", "spec.capacity: too big"),
            "API error 422: spec.capacity: too big",
        ),
        (api_error(429, "Too Many Requests", None), "API error 429: 429 Too Many Requests"),
        (TimeoutError(), "TimeoutError"),  # its text is empty: the type is what tells
        (
            ConnectionRefusedError(111, "Connection refused"),
            "ConnectionRefusedError: [Errno 111] Connection refused",
        ),
    ],
)
def test_each_failure_is_one_telling_line(error: BaseException, line: str) -> None:
    assert describe(error) == line
