"""SandmanError: the one error every call of the SDK raises."""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any

_STATUS_TYPES = {
    400: "invalid",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    409: "conflict",
    413: "too_large",
    429: "quota_exceeded",
    503: "unavailable",
}


class SandmanError(Exception):
    """A failed call.

    An answer from the API carries its error envelope
    (``{"status":"error","error":"<sentence>","error_type":"<type>"}``,
    docs/API.md "Errors"): ``status`` is the HTTP status and ``error_type``
    the envelope's (``invalid``, ``unauthorized``, ``forbidden``,
    ``not_found``, ``conflict``, ``sandbox_paused``, ``too_large``,
    ``quota_exceeded``, ``sandbox_expired``, ``sandbox_unreachable``,
    ``unavailable``, ``internal``).

    Failures without an answer have ``status`` 0 and a type of the SDK's
    own: ``network`` (refused, reset, dropped), ``timeout`` (the per-call
    timeout or the retry deadline), ``not_ready`` (wait_until_ready saw the
    session fail or end), ``invalid_signature`` (verify_webhook refused a
    delivery).
    """

    def __init__(
        self,
        status: int,
        error_type: str,
        message: str,
        retry_after: float | None = None,
        request_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message
        #: Seconds the API asked to wait (Retry-After), or None.
        self.retry_after = retry_after
        #: API Gateway's request id (apigw-requestid, or the id an internal error names), or None.
        self.request_id = request_id
        #: Attempts made, retries included.
        self.attempts = attempts

    def __repr__(self) -> str:
        return f"SandmanError(status={self.status}, error_type={self.error_type!r}, message={self.message!r})"


def error_type_of_status(status: int) -> str:
    """The error_type an answer without an envelope gets, by its status."""
    if status in _STATUS_TYPES:
        return _STATUS_TYPES[status]
    return "internal" if status >= 500 else f"http_{status}"


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Retry-After in seconds (RFC 9110: delay-seconds or an HTTP date), or None."""
    if value is None or not value.strip():
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v).timestamp()
    except (TypeError, ValueError):
        return None
    return max(0.0, float(int(at - (time.time() if now is None else now) + 0.999)))


def error_from_answer(status: int, headers: Any, text: str, attempts: int) -> SandmanError:
    """The SandmanError of a non-2xx answer, from its envelope and headers."""
    message = text[:500] or f"HTTP {status}"
    error_type = error_type_of_status(status)
    try:
        env = json.loads(text)
        if isinstance(env, dict):
            if isinstance(env.get("error"), str):
                message = env["error"]
            if isinstance(env.get("error_type"), str) and env["error_type"]:
                error_type = env["error_type"]
    except ValueError:
        pass  # not the API's envelope (a proxy's page): keep the status's type
    request_id = headers.get("apigw-requestid") or headers.get("x-amzn-requestid") or headers.get("x-request-id")
    if not request_id:
        m = re.search(r"request id ([A-Za-z0-9=_-]+)", message)
        request_id = m.group(1) if m else None
    return SandmanError(
        status,
        error_type,
        message,
        retry_after=parse_retry_after(headers.get("retry-after")),
        request_id=request_id,
        attempts=attempts,
    )
